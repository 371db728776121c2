"""Train a model: ``python -m luong_lit train [experiment=NAME] [overrides...]``.

Sweeps: ``python -m luong_lit train -m attention=local_p,global score=dot,general``.
Every run writes its config, logs, checkpoints and ``results.json`` under its own directory.
``results.json`` holds what ``trainer.test`` measures on the test sets with the best
checkpoint: perplexity, greedy BLEU and, with the beam callback on, beam BLEU.
"""

from __future__ import annotations

import json
import logging
import sys
import warnings
from pathlib import Path
from typing import Any

import hydra
from omegaconf import DictConfig

from luong_lit.cli import user_error_message
from luong_lit.config import CONF_DIR, compose, help_text
from luong_lit.errors import UserError, find_user_error
from luong_lit.runtime import configure_cpu_from
from luong_lit.sweeps.job import earlier_work, job_resources, register_resolvers
from luong_lit.training.resume import SignalCheckpoint, check_resumable

log = logging.getLogger(__name__)
register_resolvers()  # before Hydra composes: its launcher and logger configs use them
warnings.filterwarnings("ignore", message="(?s).*is validated against ConfigStore schema")


def test_results(dm, model, trainer) -> dict[str, Any]:
    """``trainer.test`` on every test set with the best checkpoint (or the final weights), as
    ``{"checkpoint": name, <test set>: {"ppl": ..., "bleu_greedy": ..., ...}}``."""
    best = getattr(trainer.checkpoint_callback, "best_model_path", "") or None
    metrics: dict[str, float] = {}
    for part in trainer.test(model, datamodule=dm, ckpt_path=best, verbose=False):
        metrics.update(part)
    results: dict[str, Any] = {"checkpoint": Path(best).name if best else "final weights"}
    ckpt = trainer.checkpoint_callback
    if ckpt is not None and ckpt.monitor == "val/ppl" and ckpt.best_model_score is not None:
        results["dev_ppl"] = float(ckpt.best_model_score)  # the best checkpoint's
    for key, value in sorted(metrics.items()):
        _, name, metric = key.split("/", 2)  # test/<name>/<metric>
        results.setdefault(name, {})[metric] = float(value)
    for name in dm.test_spec:
        log.info(
            "test %s: %s", name, ", ".join(f"{k} {v:.2f}" for k, v in results.get(name, {}).items())
        )
    return results


class Interrupted(Exception):
    """Training stopped by a signal after saving ``last.ckpt``; ``handover``: submitit's
    handler for its requeue signal, to be called now that the checkpoint is written."""

    def __init__(self, signum: int, checkpoint: Path, handover=None) -> None:
        super().__init__(f"stopped by signal {signum}")
        self.signum, self.checkpoint, self.handover = signum, checkpoint, handover


def _fit(model, dm, trainer, ckpt_path) -> None:
    from lightning.pytorch.utilities.exceptions import SIGTERMException

    try:
        trainer.fit(model, dm, ckpt_path=ckpt_path)
    except SIGTERMException:
        stop = next((c for c in trainer.callbacks if isinstance(c, SignalCheckpoint)), None)
        raise Interrupted(
            stop.signal if stop and stop.signal else 15,
            stop.path if stop else Path(),
            stop.handover if stop else None,
        ) from None
    stop = next(
        (c for c in trainer.callbacks if isinstance(c, SignalCheckpoint) and c.signal), None
    )
    if stop is not None:  # the signal came as the last step ended
        raise Interrupted(stop.signal, stop.path, stop.handover)


def train(cfg: DictConfig) -> dict[str, Any]:
    """Fit (resuming if ``ckpt_path`` is set), then test the best checkpoint on the test sets."""
    from luong_lit.training.build import build

    earlier = earlier_work(cfg)
    if earlier and earlier[0] == "done":  # no GPU slot taken, its job.json left as it was
        log.info("%s holds a finished run: not trained again", cfg.paths.output_dir)
        return {"test": earlier[1], "objective": earlier[1].get("objective_value")}
    ckpt_path = earlier[1] if earlier else cfg.get("ckpt_path")
    check_resumable(cfg, ckpt_path)  # another model's checkpoint: one line, before any work
    with job_resources(cfg) as record:  # in a sweep: the job's GPU and threads
        configure_cpu_from(cfg)
        dm, model, trainer = build(cfg)
        if earlier:
            log.info("resuming this sweep job from %s", ckpt_path)
        _fit(model, dm, trainer, ckpt_path)
        metrics = _finish(cfg, dm, model, trainer)
        record["objective"] = metrics["objective"]
        return metrics


def objective(cfg: DictConfig, trainer) -> float | None:
    """The value a sweeper optimises (``objective``): the best checkpoint's score when it is the
    checkpoint's monitor (``val/ppl``), else the metric's last value (``val/bleu``)."""
    name, ckpt = cfg.get("objective", "val/ppl"), trainer.checkpoint_callback
    if ckpt is not None and ckpt.monitor == name and ckpt.best_model_score is not None:
        return float(ckpt.best_model_score)
    value = trainer.callback_metrics.get(name)
    return None if value is None else float(value)


def _finish(cfg: DictConfig, dm, model, trainer) -> dict[str, Any]:
    metrics: dict[str, Any] = {k: float(v) for k, v in trainer.callback_metrics.items()}
    metrics["objective"] = objective(cfg, trainer)
    if cfg.get("test_after_training") and dm.test_spec:
        results = test_results(dm, model, trainer)
        results["objective"] = cfg.get("objective", "val/ppl")
        results["objective_value"] = metrics["objective"]
        if trainer.is_global_zero:
            (Path(cfg.paths.output_dir) / "results.json").write_text(json.dumps(results, indent=2))
        metrics["test"] = results
    return metrics


def resume_override(run_dir: Path) -> str:
    """``hydra.run.dir=...`` for ``run_dir``, quoted for the shell and for Hydra's parser (a
    sweep job's directory holds ``=`` and ``,``)."""
    import shlex

    return shlex.quote(f'hydra.run.dir="{run_dir}"')


@hydra.main(version_base="1.3", config_path=str(CONF_DIR), config_name="train")
def main(cfg: DictConfig) -> float | None:
    try:
        metrics = train(cfg)
    except Interrupted as stop:
        if stop.handover is not None:  # submitit's signal: it requeues the job and exits
            log.info("saved %s; submitit requeues this job", stop.checkpoint)
            stop.handover(stop.signum, None)
        run_dir = Path(stop.checkpoint).resolve().parent.parent
        print(
            f"interrupted by signal {stop.signum}: the last finished step is saved in "
            f"{stop.checkpoint}; resume with the same overrides and "
            f"ckpt_path=last {resume_override(run_dir)}",
            file=sys.stderr,
        )
        sys.exit(128 + stop.signum)
    except Exception as err:  # noqa: BLE001 - turn our own errors into one clear line
        ours = find_user_error(err)
        if ours is None:
            raise
        print(user_error_message(ours), file=sys.stderr)
        from hydra.core.hydra_config import HydraConfig
        from hydra.types import RunMode

        if HydraConfig.get().mode == RunMode.MULTIRUN:
            return float("nan")  # the sweep goes on with its other jobs (optuna: a failed trial)
        sys.exit(2)
    return metrics.get("objective")


def run(argv: list[str]) -> None:
    """``python -m luong_lit train ARGS``: the overrides are checked to compose (a one-line error
    and exit status 2 if they do not) before the Hydra app runs with them. ``--help`` is the
    kit's own page (:func:`luong_lit.config.help_text`; Hydra's: ``--hydra-help``)."""
    if "--help" in argv or "-h" in argv:
        sys.stdout.write(help_text())
        sys.exit(0)
    if not any(a.startswith("-") for a in argv):  # a single run (sweeps and Hydra's flags: Hydra)
        try:
            compose(argv)
        except UserError as err:
            print(user_error_message(err), file=sys.stderr)
            sys.exit(2)
    sys.argv = [sys.argv[0], *argv]
    main()


if __name__ == "__main__":
    run(sys.argv[1:])
