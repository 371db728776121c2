"""Fine-tuning: a new run that starts from a trained checkpoint's weights (``init_from=CKPT``,
OpenNMT-py's ``-train_from`` with its optimizer reset, fairseq's ``--finetune-from-model``).

Unlike a resume (``ckpt_path``, which continues a run with all of its state), the run is new:
its own folder, a fresh optimizer, learning-rate schedule, step counter and best score, on any
corpus. It keeps the checkpoint's vocabularies (the training words outside them become
``<unk>``, counted and said at the start) and its model: the architecture is read from the
checkpoint (:func:`take_model`), so a command names only what changes (the data, the optimizer,
the schedule, :data:`MAY_DIFFER`); a model key it sets otherwise than the checkpoint is refused
in one line naming both values. ``freeze`` keeps parts of the model as they are
(:data:`FREEZABLE`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from luong_lit.checkpoint.files import read_checkpoint
from luong_lit.checkpoint.meta import CheckpointMeta
from luong_lit.checkpoint.models import NOT_NET_ARGS
from luong_lit.config_parts import GROUPS  # config groups that set a model.net key
from luong_lit.errors import ConfigError

log = logging.getLogger(__name__)

#: ``model.net`` keys a fine-tuned run may set otherwise than its checkpoint (no weight depends
#: on them)
MAY_DIFFER = frozenset({"dropout", "hidden_dropout", "output_dropout"})
#: what ``freeze`` may name, and the parameters (by name prefix in the network) each holds
FREEZABLE = {
    "embeddings": ("encoder.embedding.", "decoder.embedding."),
    "encoder": ("encoder.",),
    "decoder": ("decoder.",),
}


Vocab = tuple[tuple[str, ...], tuple[str, ...]]  #: a model's (source, target) vocabularies


@dataclass(frozen=True)
class Start:
    """A fine-tuned run's start, its checkpoint (``path``, ``init_from``) read once: its
    vocabularies (``vocab``) and its network's weights (``weights``, mapped from the file:
    read as they are loaded)."""

    path: Path
    vocab: Vocab
    weights: dict[str, Any]


def start_of(cfg) -> Start | None:
    """The start ``init_from`` names, checked to be a file of a model this run may start from
    (one line otherwise, before any data is read), the config's model set to its model
    (:func:`take_model`); None without ``init_from``."""
    value = cfg.get("init_from")
    if not value:
        if cfg.get("freeze"):
            raise ConfigError(f"freeze={list(cfg.freeze)} keeps parts of a fine-tuned model as "
                              f"they are: give init_from=CKPT too (a new model's parts would "
                              f"stay at their random start)")  # fmt: skip
        return None
    path = Path(str(value))
    if path.is_dir():
        raise ConfigError(f"init_from={value} is a folder: give a checkpoint file "
                          f"(RUN/checkpoints/best.ckpt)")  # fmt: skip
    if not path.is_file():
        raise ConfigError(f"init_from={value}: no such file")
    _check_freeze(cfg.get("freeze") or [])
    ckpt = read_checkpoint(path, mmap=True)  # its tensors mapped, not read
    meta = CheckpointMeta.of(ckpt, path)
    if meta.sentencepiece:
        raise ConfigError(f"init_from={value}: a model of sentencepiece pieces cannot be "
                          f"fine-tuned yet (its pieces model would have to tokenise the new "
                          f"corpus); train it from scratch")  # fmt: skip
    taken = take_model(cfg, meta.net.config, value, asked_keys(command_overrides()))
    if taken:
        log.info("fine-tuning %s: its model, read from it (%s)", value,
                 ", ".join(f"{k} {_shown(meta.net.config.get(k))}" for k in taken))  # fmt: skip
        _save_config(cfg)
    weights = {k[len("net.") :]: v for k, v in ckpt["state_dict"].items() if k.startswith("net.")}
    return Start(path, vocabularies(meta), weights)


def _save_config(cfg) -> None:
    """The run's saved config (``.hydra/config.yaml``, written by Hydra as the run began) with
    the checkpoint's model: what ``report`` and a resume read of the run."""
    from omegaconf import OmegaConf

    saved = Path(str(cfg.paths.output_dir)) / ".hydra" / "config.yaml"
    if saved.is_file():
        OmegaConf.save(cfg, saved)


def _check_freeze(parts) -> None:
    unknown = [p for p in parts if p not in FREEZABLE]
    if unknown:
        raise ConfigError(f"freeze={list(parts)}: {unknown[0]} is not a part of the model; "
                          f"choose from {', '.join(FREEZABLE)}")  # fmt: skip


def _shown(value: Any) -> str:
    if isinstance(value, dict) and "name" in value:
        return str(value["name"])
    return str(value).lower() if isinstance(value, bool) else str(value)


#: top-level keys that set a ``model.net`` key of the same name (conf/model/luong.yaml)
TOP_LEVEL = ("feed_input", "reverse_source", "dropout")


def asked_keys(overrides: list[str]) -> set[str]:
    """The ``model.net`` keys a command line sets (``model.net.K=V``, ``attention=``,
    ``score=``, ``feed_input=``, ...)."""
    asked = set()
    for text in overrides:
        key = text.split("=", 1)[0].lstrip("+~")
        if key.startswith("model.net."):
            asked.add(key.split(".")[2])
        elif key in TOP_LEVEL or key in GROUPS:
            asked.add(key)
    return asked


def command_overrides() -> list[str]:
    """This Hydra run's command-line overrides (none outside a Hydra app)."""
    from hydra.core.hydra_config import HydraConfig

    return list(HydraConfig.get().overrides.task) if HydraConfig.initialized() else []


def take_model(cfg, was: dict[str, Any], source: str, asked: set[str]) -> list[str]:
    """Set ``cfg.model.net`` to the checkpoint's model (``was``), but for the keys of
    :data:`MAY_DIFFER` the command sets (``asked``); a model key it sets otherwise is refused in
    one line naming both values. Returns the keys taken from the checkpoint."""
    from omegaconf import OmegaConf, open_dict

    now = OmegaConf.to_container(cfg.model.net, resolve=True)
    differ = [k for k in sorted(set(was) | set(now))
              if k not in NOT_NET_ARGS and was.get(k) != now.get(k)]  # fmt: skip
    refused = [k for k in differ if k in asked and k not in MAY_DIFFER]
    if refused:
        key = refused[0]
        more = f" (and {', '.join(refused[1:])})" if refused[1:] else ""
        raise ConfigError(
            f"init_from={source} is a model with model.net.{key}={_shown(was.get(key))}, and "
            f"this run asks for {_shown(now.get(key))}{more}: leave it out (a fine-tuned model "
            f"is the checkpoint's), or train from scratch"
        )
    taken = [k for k in differ if k not in asked]
    with open_dict(cfg):
        for key in taken:
            cfg.model.net[key] = was.get(key)
            if key in TOP_LEVEL:
                cfg[key] = was.get(key)
    return taken


def vocabularies(meta: CheckpointMeta) -> Vocab:
    """A checkpoint's (source, target) vocabularies, for the datamodule to encode with."""
    return tuple(meta.src_vocab), tuple(meta.tgt_vocab)


def start_from(model, dm, start: Start, parts, resumed: bool = False) -> None:
    """A fine-tuned model's start: the weights of ``start`` loaded (not for a ``resumed`` run:
    its weights are its own checkpoint's), ``parts`` frozen (:func:`freeze`), and the share
    of the training text outside its vocabularies said."""
    if not resumed:
        model.net.load_state_dict(start.weights)
        log.info("fine-tuning from %s: its weights and vocabularies, a fresh optimizer",
                 start.path)  # fmt: skip
    freeze(model, parts)
    say_outside_vocab(dm)


def freeze(model, parts) -> None:
    """Keep ``parts`` of ``model``'s network as they are (:data:`FREEZABLE`): no gradient, so
    no update."""
    prefixes = tuple(p for part in (parts or []) for p in FREEZABLE[part])
    if not prefixes:
        return
    frozen = 0
    for name, param in model.net.named_parameters():
        if name.startswith(prefixes):
            param.requires_grad_(False)
            frozen += param.numel()
    log.info("frozen: %s (%s weights)", ", ".join(parts), f"{frozen:,}")


def say_outside_vocab(dm) -> None:
    """One line: how much of the training text is outside the checkpoint's vocabularies."""
    stats = (dm.train_store.meta.get("stats") or {}) if dm.train_store is not None else {}
    outside, words = stats.get("outside_vocab"), stats.get("words") or {}
    if not outside:
        return
    shares = ", ".join(
        f"{side} {outside[side]:,} of {words.get(side, 0):,} words "
        f"({100 * outside[side] / max(words.get(side, 1), 1):.1f} %)"
        for side in ("src", "tgt")
    )
    log.info("outside the checkpoint's vocabularies, so <unk>: %s", shares)
