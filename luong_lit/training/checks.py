"""Every numeric option of a training config checked at start-up, before any data is read.

A value of the wrong type or out of its range stops the run with a message that names the
option, its value and the range it must lie in.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from omegaconf import DictConfig, OmegaConf

from luong_lit.errors import ConfigError

Rule = tuple[Callable[[Any], bool], str]


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def count(low: int) -> Rule:
    return (lambda v: _number(v) and float(v).is_integer() and v >= low), f"an integer >= {low}"


POSITIVE: Rule = (lambda v: _number(v) and v > 0), "a number > 0"
RATE: Rule = (lambda v: _number(v) and 0 <= v < 1), "a number in [0, 1)"


def nullable(rule: Rule) -> Rule:
    return (lambda v: v is None or rule[0](v)), rule[1] + ", or null"


RULES: dict[str, Rule] = {
    "dropout": RATE,
    "data.batch_size": count(1),
    "data.eval_batch_size": count(1),
    "data.max_len": nullable(count(1)),
    "data.min_freq": count(1),
    "data.vocab_size": nullable(count(1)),
    "data.chunk_batches": count(1),
    "data.num_workers": count(0),
    "data.prepare_workers": nullable(count(1)),
    "model.net.embed_size": count(1),
    "model.net.hidden_size": count(1),
    "model.net.num_layers": count(1),
    "model.net.dropout": RATE,
    "model.net.hidden_dropout": RATE,
    "model.net.output_dropout": RATE,
    "model.net.init_scale": POSITIVE,
    "model.net.attention.D": count(1),
    "model.net.score.max_src_len": count(1),
    "model.label_smoothing": RATE,
    "model.clip_norm": nullable(POSITIVE),
    "model.optimizer.lr": POSITIVE,
    "model.halve_after": nullable(count(0)),
    "model.anneal_epochs": nullable(POSITIVE),
    "trainer.max_epochs": nullable(count(1)),
    "callbacks.greedy_bleu.every_n_epochs": count(0),
    "callbacks.greedy_bleu.batch_size": count(1),
    "callbacks.beam_bleu.every_n_epochs": count(0),
    "callbacks.beam_bleu.beam_size": count(1),
    "callbacks.beam_bleu.batch_size": count(1),
    "callbacks.checkpoint.every_n_train_steps": count(0),
    "callbacks.checkpoint.every_n_minutes": nullable(POSITIVE),
    "threads": nullable(count(1)),
}
_ABSENT = object()


def check_config(cfg: DictConfig) -> None:
    """Check every numeric option of a composed training config (:data:`RULES`)."""
    for name, (ok, allowed) in RULES.items():
        value = OmegaConf.select(cfg, name, default=_ABSENT, throw_on_missing=False)
        if value is _ABSENT or value == "???":
            continue
        if not ok(value):
            raise ConfigError(f"{name}={value!r} is out of range: it must be {allowed}")
    impl = OmegaConf.select(cfg, "model.net.impl", default="fast")
    if impl not in ("fast", "reference"):
        raise ConfigError(f"model.net.impl={impl!r} is unknown; choose fast or reference")
    penalty = OmegaConf.select(cfg, "callbacks.beam_bleu.length_penalty", default=None)
    if penalty not in (None, "none", "avg") and not _number(penalty):
        raise ConfigError(
            f"callbacks.beam_bleu.length_penalty={penalty!r}: use null, avg or a number"
        )
