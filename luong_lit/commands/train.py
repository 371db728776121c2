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
import traceback
from pathlib import Path

import hydra
from omegaconf import DictConfig

from luong_lit.cli import hydra_errors, job_error, user_error_message, with_plugins
from luong_lit.config import CONF_DIR, check_seed, check_sweep, compose
from luong_lit.config_help import help_text
from luong_lit.config_parts import offer_parts
from luong_lit.errors import UserError, find_user_error
from luong_lit.runtime import is_rank_zero, own_log_file, quiet, ranks_start_as
from luong_lit.sweeps.dirnames import note_swept
from luong_lit.sweeps.resolvers import register_resolvers
from luong_lit.training.folders import Finished, check_run_start
from luong_lit.training.lost_ranks import RankLost, lost_message
from luong_lit.training.resume import resume_argv
from luong_lit.training.run import Interrupted, train
from luong_lit.training.run_folder import resume_command
from luong_lit.training.run_lines import (
    done_message,
    holds_nothing,
    interrupted_message,
    remove_run,
    start_message,
    to_log_file,
)

log = logging.getLogger(__name__)
register_resolvers()  # before Hydra composes: its launcher and logger configs use them
quiet()  # the libraries' routine notices (luong_lit.runtime.quiet)


def task(cfg: DictConfig) -> float | None:
    """One run, or a sweep's job: a function of this module under its own name, so that a
    joblib worker unpickles it by importing this module (its filters and resolvers)."""
    run_dir = Path(cfg.paths.output_dir)
    fresh = run_dir.is_dir() and holds_nothing(run_dir)
    own_log_file(run_dir)  # a data-parallel run's other ranks: a log file of their own
    say = print if is_rank_zero() else _silent  # what a run says, it says once
    say(start_message(run_dir), flush=True)  # written to a file, a run names its folder first
    try:
        check_seed(cfg.get("seed"))  # numpy's range, before Lightning seeds with it
        metrics = train(cfg)
    except Interrupted as stop:
        if stop.handover is not None:  # submitit's signal: it requeues the job and exits
            log.info("saved %s; submitit requeues this job", stop.checkpoint)
            stop.handover(stop.signum, None)
        said = interrupted_message(stop.signum, stop.checkpoint, stop.stage)
        say(said, file=sys.stderr)
        to_log_file(said)  # train.log keeps it too
        sys.exit(128 + stop.signum)
    except RankLost as lost:  # a rank died: one line, the resume command
        said = lost_message(lost.ranks, lost.checkpoint, resume_command(run_dir))
        say(said, file=sys.stderr)
        to_log_file(said)
        sys.exit(1)
    except Exception as err:  # noqa: BLE001 - turn our own errors into one clear line
        ours = find_user_error(err)
        if ours is None:
            job_error(err)  # a bug: it keeps its traceback (cli.hydra_errors)
            # train.log keeps the whole chain: a joblib job's error reaches the sweep without
            # its cause, which may be an earlier error that Lightning's teardown covered
            to_log_file("".join(traceback.format_exception(err)), logging.ERROR)
            raise
        say(user_error_message(ours), file=sys.stderr)
        if fresh and is_rank_zero():
            remove_run(run_dir)
        from hydra.core.hydra_config import HydraConfig
        from hydra.types import RunMode

        if HydraConfig.get().mode == RunMode.MULTIRUN:
            return float("nan")  # the sweep goes on with its other jobs (optuna: a failed trial)
        sys.exit(2)
    say(done_message(run_dir))
    return metrics.get("objective")


def _silent(*args, **kwargs) -> None:
    """``print`` on a rank other than 0."""


main = hydra.main(version_base="1.3", config_path=str(CONF_DIR), config_name="train")(task)


def run(argv: list[str]) -> None:
    """``python -m luong_lit train ARGS``: the overrides are checked to compose (a one-line error
    and exit status 2 if they do not) before the Hydra app runs with them. ``--help`` is the
    kit's own page (:func:`luong_lit.config_help.help_text`; Hydra's: ``--hydra-help``)."""
    try:
        argv = with_plugins(argv)  # python -m luong_lit.train --user-dir DIR ...
    except UserError as err:
        print(user_error_message(err), file=sys.stderr)
        sys.exit(2)
    if "--help" in argv or "-h" in argv:
        sys.stdout.write(help_text())
        sys.exit(0)
    sweep = [a for a in argv if a in ("-m", "--multirun")][:1]
    argv = sweep + [a for a in argv if a not in ("-m", "--multirun")]  # -m after an override too
    if not any(a.startswith("-") for a in argv[len(sweep) :]):  # Hydra's other flags: Hydra
        try:
            if not sweep:  # ckpt_path=last: the run's own overrides (its folder's), then argv's
                check_run_start(argv, resume_command)  # its folder and checkpoint, before all
                argv = resume_argv(argv)
            if sweep:
                check_sweep(argv[1:])  # its jobs compose, its launcher can start here
            else:
                check_seed(compose(argv).get("seed"))
        except Finished as done:
            print(done)
            sys.exit(0)
        except UserError as err:
            print(user_error_message(err), file=sys.stderr)
            sys.exit(2)
    if "-m" in argv or "--multirun" in argv:
        note_swept(argv)
    sys.argv = [sys.argv[0], *argv]
    ranks_start_as("luong_lit.train")  # Lightning's other ranks: the overrides are its
    offer_parts()  # the parts registered so far, as Hydra's app composes (its jobs get its store)
    with hydra_errors(argv):  # Hydra's own errors (composing, launching: -m too) in one line
        main()


if __name__ == "__main__":
    run(sys.argv[1:])
