"""A run's ``results.json``: what ``trainer.test`` measures with the best checkpoint on every test
set (each figure exact, as computed: :mod:`luong_lit.training.figures`), or, without a test, the
best checkpoint and its dev score; and the value a sweeper optimises."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from luong_lit.metrics.signatures import figure_signatures

log = logging.getLogger(__name__)


def test_results(dm, model, trainer) -> dict[str, Any]:
    """``trainer.test`` on every test set with the best checkpoint (or the final weights), as
    ``{"checkpoint": name, <test set>: {"ppl": ..., "bleu_greedy": ..., ...}}``."""
    best = getattr(trainer.checkpoint_callback, "best_model_path", "") or None
    metrics: dict[str, float] = {}
    for part in trainer.test(model, datamodule=dm, ckpt_path=best, verbose=False):
        metrics.update(part)
    results: dict[str, Any] = {"checkpoint": Path(best).name if best else "final weights"}
    dev = best_dev_ppl(trainer)
    if dev is not None:
        results["dev_ppl"] = dev  # the best checkpoint's
    for key, value in sorted(metrics.items()):
        _, name, metric = key.split("/", 2)  # test/<name>/<metric>
        results.setdefault(name, {})[metric] = float(value)
    for name, exact in getattr(model, "test_figures", {}).items():  # as computed, not float32
        results.setdefault(name, {}).update(exact)
    for figures in (v for v in results.values() if isinstance(v, dict)):
        for key in ("sentences_ppl", "sentences_bleu"):
            if key in figures:
                figures[key] = int(figures[key])
    results.update(figure_signatures(metrics))  # "chrf_signature": sacreBLEU's, ...
    for name in dm.test_spec:
        log.info(
            "test %s: %s",
            name,
            ", ".join(
                f"{k} {v:.2f}" if isinstance(v, float) else f"{k} {v}"
                for k, v in results.get(name, {}).items()
            ),
        )
    return results


def objective(cfg: DictConfig, trainer) -> float | None:
    """The value a sweeper optimises (``objective``): the best checkpoint's score when it is the
    checkpoint's monitor (``val/ppl``), else the metric's last value (``val/bleu``)."""
    name, ckpt = cfg.get("objective", "val/ppl"), trainer.checkpoint_callback
    if ckpt is not None and ckpt.monitor == name and ckpt.best_model_score is not None:
        return float(ckpt.best_model_score)
    if name == "val/ppl" and best_dev_ppl(trainer) is not None:  # trained in other processes
        return best_dev_ppl(trainer)
    value = trainer.callback_metrics.get(name)
    return None if value is None else float(value)


def untested(trainer) -> dict[str, Any]:
    """``results.json`` of a run that ends without a test: its best checkpoint and dev score."""
    ckpt = trainer.checkpoint_callback
    best = getattr(ckpt, "best_model_path", "") or None
    results: dict[str, Any] = {"checkpoint": Path(best).name if best else "final weights"}
    dev = best_dev_ppl(trainer)
    if dev is not None:
        results["dev_ppl"] = dev
    return results


def best_dev_ppl(trainer) -> float | None:
    """The best checkpoint's dev perplexity: the checkpoint callback's score, or, where this
    process did not train (``ddp_spawn``: its ranks did), the score ``best.ckpt`` keeps."""
    ckpt = trainer.checkpoint_callback
    if ckpt is None or ckpt.monitor != "val/ppl":
        return None
    if ckpt.best_model_score is not None:
        return float(ckpt.best_model_score)
    if not ckpt.best_model_path or not Path(ckpt.best_model_path).is_file():
        return None
    from luong_lit.checkpoint.files import read_checkpoint

    states = read_checkpoint(ckpt.best_model_path).get("callbacks", {})
    found = [
        v.get("best_model_score") for k, v in states.items() if k.startswith("ModelCheckpoint")
    ]
    score = next((x for x in found if x is not None), None)
    return None if score is None else float(score)
