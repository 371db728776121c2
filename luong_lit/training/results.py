"""A run's ``results.json``: what ``trainer.test`` measures with the best checkpoint on every test
set (each figure exact, as computed: :mod:`luong_lit.training.figures`), or, without a test, the
best checkpoint and its dev score; and the value a sweeper optimises."""

from __future__ import annotations

import logging
from pathlib import Path

from omegaconf import DictConfig

from luong_lit.metrics.signatures import figure_signatures
from luong_lit.reports import Results, TestFigures

log = logging.getLogger(__name__)


def test_results(dm, model, trainer) -> Results:
    """``trainer.test`` on every test set with the best checkpoint (or the final weights): the
    :class:`~luong_lit.reports.Results` that ``results.json`` is written from, each test set's
    figures as computed (not the float32 the loggers get)."""
    best = getattr(trainer.checkpoint_callback, "best_model_path", "") or None
    metrics: dict[str, float] = {}
    for part in trainer.test(model, datamodule=dm, ckpt_path=best, verbose=False):
        metrics.update(part)
    groups: dict[str, dict[str, float]] = {}
    for key, value in sorted(metrics.items()):
        _, name, metric = key.split("/", 2)  # test/<name>/<metric>
        groups.setdefault(name, {})[metric] = float(value)
    for name, exact in getattr(model, "test_figures", {}).items():
        groups.setdefault(name, {}).update(exact)
    results = Results(
        checkpoint=Path(best).name if best else "final weights", dev_ppl=best_dev_ppl(trainer),
        tests={name: TestFigures.from_json(found) for name, found in groups.items()},
        signatures=figure_signatures(metrics),
    )  # fmt: skip
    for name in dm.test_spec:
        figures = results.tests[name].to_json() if name in results.tests else {}
        said = (f"{k} {v:.2f}" if isinstance(v, float) else f"{k} {v}" for k, v in figures.items())
        log.info("test %s: %s", name, ", ".join(said))
    return results


def objective(cfg: DictConfig, trainer, metrics: dict[str, float]) -> float | None:
    """The value a sweeper optimises (``objective``): the best checkpoint's score when it is the
    checkpoint's monitor (``val/ppl``), else the metric's last value in training's ``metrics``
    (``val/bleu``; the trainer's, read before the test resets them)."""
    name, ckpt = cfg.get("objective", "val/ppl"), trainer.checkpoint_callback
    if ckpt is not None and ckpt.monitor == name and ckpt.best_model_score is not None:
        return float(ckpt.best_model_score)
    if name == "val/ppl" and best_dev_ppl(trainer) is not None:  # trained in other processes
        return best_dev_ppl(trainer)
    value = metrics.get(name)
    return None if value is None else float(value)


def untested(trainer) -> Results:
    """``results.json`` of a run that ends without a test: its best checkpoint and dev score."""
    best = getattr(trainer.checkpoint_callback, "best_model_path", "") or None
    return Results(checkpoint=Path(best).name if best else "final weights",
                   dev_ppl=best_dev_ppl(trainer))  # fmt: skip


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
