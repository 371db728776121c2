"""The runs behind the ladders' verdicts: every seed of every row they test, trained, decoded
and kept, resumable.

    python -m scripts.studies.verdict_runs [--logs logs/verdicts] [--queue NAME ...] [--workers 2]
    python -m scripts.studies.verdict_runs --list        # every job and where it stands
    python -m scripts.studies.verdict_runs --queue ours --study ours --rows table1_reverse

Each job is one run, ``LOGS/STUDY/ROW/seedS``: trained (``hydra.run.dir`` of its own, one thread),
then its test sets decoded (``python -m luong_lit evaluate ... --out RUN``: beam 5, the lines
BLEU read kept), then exported to ``results/ladders/STUDY/ROW/seedS`` (:mod:`.export_runs`: the
config, ``results.json``, the evaluation record and the decoded lines; never a checkpoint).
Run it again to pick up where it stopped: an exported job is skipped, a trained one is only
decoded, an interrupted one resumes from its ``last.ckpt`` (``ckpt_path=last``), the rest start.
``--workers`` jobs run at once, one thread each, at low priority.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from luong_lit.analysis.decoded import checkpoint_of
from scripts.studies.export_runs import RESULTS, export

SEEDS = (1234, 2, 3, 4, 5)
SIGNS = ("table1_base", "table1_reverse", "table1_dropout")  # the rows whose sign is in question
TABLE1 = (*SIGNS, "table1_global_location", "table1_feed_input", "table1_local_p_general")
TABLE3 = ("table3_base_reverse", "table3_global_location", "table3_feed_input",
          "table3_global_dot_dropout")  # fmt: skip
QUIET = ["threads=1", "trainer.enable_progress_bar=false"]
COMMON = ["callbacks.beam_bleu.on_test=false", "callbacks.checkpoint.every_n_minutes=10", *QUIET]


@dataclass(frozen=True)
class Job:
    study: str
    row: str
    seed: int
    overrides: tuple[str, ...]

    def folder(self, logs: Path) -> Path:
        return logs / self.study / self.row / f"seed{self.seed}"

    @property
    def name(self) -> str:
        return f"{self.study}/{self.row}/seed{self.seed}"


def europarl_study(logs: Path) -> list[str]:
    """The Europarl study's overrides: our recipe with the paper's decoder start and a
    20,000-word vocabulary on the Europarl cut (:func:`europarl`)."""
    return ["model.net.init_state=copy", "data.vocab_size=20000", *europarl(logs)]


def europarl(logs: Path) -> list[str]:
    """The Europarl cut's ``data=files`` overrides (the cut written once, under ``logs``)."""
    from scripts.studies.europarl_split import overrides, write

    out = logs / "europarl20k"
    if not (out / "test.de").is_file():
        write(out)
    return overrides(out)


#: each study: (its rows, the overrides every run of it takes, or the function that makes them
#: from the logs folder where they need files written there)
def studies() -> dict[str, tuple[tuple[str, ...], list[str] | Callable[[Path], list[str]]]]:
    paper_long = ["experiment=m30k_paper_long"]
    return {
        # our recipe (m30k_small) with its decoder start, and with the paper's
        "ours": (SIGNS, []),
        "ours_copy": (SIGNS, ["model.net.init_state=copy"]),
        # Europarl's reversal pair, our recipe with the paper's decoder start (the cut written
        # only where one of its jobs is asked for: :func:`jobs`)
        "europarl": (("table1_base", "table1_reverse"), europarl_study),
        # the paper's recipe trained until dev perplexity stops improving: every row of Table 1
        "paper_long": (TABLE1, paper_long),
        # and of Table 3 (De->En)
        "paper_long_deen": (TABLE3, paper_long),
        # its last row with a vocabulary cut (words seen once become <unk>), so that the unk
        # rows (copy and dictionary) are measured on the paper's recipe too
        "paper_long_unk": (("table1_local_p_general",), [*paper_long, "data.min_freq=2"]),
        # the paper's own 10/12-epoch recipe: dropout's row and its schedule's control
        "paper": (("table1_reverse", "table1_dropout"), ["experiment=m30k_paper"]),
        "main_epochs": (("m30k_small",), ["callbacks.epoch_checkpoints.every_n_epochs=1"]),
        "main_ema": (("m30k_small",), ["callbacks.ema.decay=0.999"]),
        "paper_control": (
            ("table1_reverse",),
            ["experiment=m30k_paper", "trainer.max_epochs=12", "model.scheduler.after=8"],
        ),
    }


#: the queues, in the order their jobs run: seeds outermost, so that a queue cut short leaves
#: every row with the same seeds
QUEUES = {
    "ours": ("ours", "ours_copy"),
    "paper": ("paper_long", "paper_long_unk"),
    # the paper's recipe over seeds: Table 1, then Table 3, seed by seed
    "paper_seeds": ("paper_long", "paper_long_deen"),
    "control": ("paper", "paper_control"),
    "europarl": ("europarl",),
    # the two ways to smooth a model, on the main job: the last epochs' weights averaged
    # (`average`) and the moving average (callbacks.ema.decay)
    "smoothing": ("main_epochs", "main_ema"),
}


def jobs(logs: Path, queues: list[str], seeds: tuple[int, ...]) -> list[Job]:
    known = studies()
    found = []
    for queue in queues:
        for seed in seeds:
            for study in QUEUES[queue]:
                rows, overrides = known[study]
                extra = overrides(logs) if callable(overrides) else overrides
                for row in rows:
                    picked = () if row == "m30k_small" else (f"ladder={row}",)  # the main job
                    found.append(Job(study, row, seed, (*picked, f"seed={seed}", *extra)))
    return found


def state(job: Job, logs: Path, results: Path = RESULTS) -> str:
    run = job.folder(logs)
    if (results / job.name / "results.json").is_file():
        return "exported"
    if list(run.glob("eval_*.json")):
        return "decoded"
    if (run / "results.json").is_file():
        return "trained"
    if (run / "checkpoints" / "last.ckpt").is_file():
        return "interrupted"
    return "to start"


def call(cmd: list[str], log: Path) -> None:
    print("+", " ".join(cmd), flush=True)
    with log.open("a") as fh:
        subprocess.run(["nice", "-n", "10", *cmd], check=True, stdout=fh, stderr=fh)


def run_job(job: Job, logs: Path, results: Path, extra: list[str], device: str = "cpu") -> None:
    run = job.folder(logs)
    run.parent.mkdir(parents=True, exist_ok=True)
    log = run.parent / f"seed{job.seed}.log"
    train = [sys.executable, "-m", "luong_lit.train", f'hydra.run.dir="{run}"']
    now = state(job, logs)
    if now == "interrupted":
        call([*train, "ckpt_path=last", *QUIET], log)
    elif now == "to start":
        call([*train, *job.overrides, *COMMON, *extra], log)
    if state(job, logs) == "trained":
        ckpt = checkpoint_of(run)
        call([sys.executable, "-m", "luong_lit", "evaluate", str(ckpt), "--out", str(run),
              "--threads", "1", "--device", device, "--quiet"], log)  # fmt: skip
    export(run, results / job.name, results.parent / "references")  # beside the kept runs


def worker(todo: list[Job], lock: threading.Lock, logs: Path, *rest) -> None:
    while True:
        with lock:
            if not todo:
                return
            job = todo.pop(0)
        try:
            run_job(job, logs, *rest)
        except subprocess.CalledProcessError as err:
            print(f"{job.name}: failed ({err}); see {job.folder(logs).parent}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--logs", type=Path, default=Path("logs/verdicts"))
    ap.add_argument("--queue", action="append", choices=sorted(QUEUES), help="default: all")
    ap.add_argument("--study", action="append", help="only this queue's study (e.g. ours)")
    ap.add_argument("--rows", nargs="+", help="only these rows (e.g. table1_base table1_reverse)")
    ap.add_argument("--seeds", type=int, nargs="+", default=list(SEEDS))
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--results", type=Path, default=RESULTS, help="where runs are exported")
    ap.add_argument("--extra", nargs="*", default=[], help="overrides added to every new run")
    ap.add_argument("--device", default="cpu", help="where evaluate decodes (e.g. cuda)")
    ap.add_argument("--list", action="store_true", help="list the jobs and their state, run none")
    args = ap.parse_args()
    todo = jobs(args.logs, args.queue or list(QUEUES), tuple(args.seeds))
    todo = [j for j in todo if args.study is None or j.study in args.study]
    todo = [j for j in todo if args.rows is None or j.row in args.rows]
    if args.list:
        for job in todo:
            print(f"{state(job, args.logs, args.results):12s} {job.name}")
        return
    todo = [j for j in todo if state(j, args.logs, args.results) != "exported"]
    print(f"{len(todo)} jobs to run, {args.workers} at a time (pid {os.getpid()})", flush=True)
    lock = threading.Lock()
    work = (todo, lock, args.logs, args.results, args.extra, args.device)
    threads = [threading.Thread(target=worker, args=work) for _ in range(args.workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


if __name__ == "__main__":
    main()
