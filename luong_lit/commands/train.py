"""Train a model: ``python -m luong_lit train [experiment=NAME] [overrides...]``.

Sweeps: ``python -m luong_lit train -m attention=local_p,global score=dot,general``.
Every run writes its config, logs, checkpoints and ``results.json`` under its own directory.
``results.json`` holds what ``trainer.test`` measures on the test sets with the best
checkpoint: perplexity, greedy BLEU and, with the beam callback on, beam BLEU. The run itself
is :func:`luong_lit.training.run.train`; this module is its command line.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import hydra
from omegaconf import DictConfig

from luong_lit.cli import user_error_message
from luong_lit.config import CONF_DIR, compose, help_text
from luong_lit.errors import UserError, find_user_error
from luong_lit.quiet import quiet
from luong_lit.sweeps.dirnames import note_swept
from luong_lit.sweeps.resolvers import register_resolvers
from luong_lit.training.run import (
    Interrupted,
    done_message,
    holds_nothing,
    remove_run,
    resume_override,
    train,
)

log = logging.getLogger(__name__)
register_resolvers()  # before Hydra composes: its launcher and logger configs use them
quiet()  # the libraries' routine notices (luong_lit.quiet)


@hydra.main(version_base="1.3", config_path=str(CONF_DIR), config_name="train")
def main(cfg: DictConfig) -> float | None:
    run_dir = Path(cfg.paths.output_dir)
    fresh = run_dir.is_dir() and holds_nothing(run_dir)
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
        if fresh:
            remove_run(run_dir)
        from hydra.core.hydra_config import HydraConfig
        from hydra.types import RunMode

        if HydraConfig.get().mode == RunMode.MULTIRUN:
            return float("nan")  # the sweep goes on with its other jobs (optuna: a failed trial)
        sys.exit(2)
    print(done_message(run_dir))
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
    if "-m" in argv or "--multirun" in argv:
        note_swept(argv)
    sys.argv = [sys.argv[0], *argv]
    main()


if __name__ == "__main__":
    run(sys.argv[1:])
