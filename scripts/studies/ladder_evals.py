"""Every finished ladder run's test set decoded (beam 5, outputs kept), and each ladder's ensemble.

    python -m scripts.studies.ladder_evals SWEEP [SWEEP ...] [--dictionary FILE] [--threads 1]

After ``bash scripts/studies/ladder_runs.sh`` (training only): each run that has its
``results.json`` and no ``eval_*.json`` yet gets ``python -m luong_lit evaluate
RUN/checkpoints/best.ckpt --out RUN`` (beam 5, BLEU before and after unknown-word replacement,
the lines BLEU read kept for the paired tests of ``report``). A sweep whose last ladder row has
finished runs gets the ensemble of those runs (``SWEEP/ensemble_table1/``, ``.../ensemble_table3/``:
what ``report`` reads). With ``--dictionary`` (a ``src tgt`` file, e.g. from ``python -m
luong_lit dictionary``) each attention run is decoded once more with it, into ``RUN/dictionary/``.
Run it again to pick up runs that finished since: what exists is not decoded again.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from luong_lit.analysis.runs import describe, is_run

LAST_ROWS = {"table1": "table1_local_p_general", "table3": "table3_global_dot_dropout"}


def evaluate(ckpts: list[Path], out: Path, extra: list[str]) -> None:
    cmd = [sys.executable, "-m", "luong_lit", "evaluate", *map(str, ckpts), "--quiet"]
    cmd += ["--out", str(out), *extra]
    print("+", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)


def finished(sweep: Path) -> list[Path]:
    return sorted(r for r in sweep.iterdir() if is_run(r) and (r / "results.json").is_file())


def ensembles(sweep: Path, runs: list[Path], extra: list[str]) -> None:
    for table, row in LAST_ROWS.items():
        members = [r for r in runs if describe(r).ladder == row]
        out = sweep / f"ensemble_{table}"
        if len(members) > 1 and not list(out.glob("eval_*_ensemble.json")):
            evaluate([r / "checkpoints" / "best.ckpt" for r in members], out, extra)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("sweeps", nargs="+", type=Path)
    ap.add_argument("--dictionary", help="also decode each attention run with this dictionary")
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    extra = ["--threads", str(args.threads)]
    for sweep in args.sweeps:
        runs = finished(sweep)
        for run in runs:
            ckpt = run / "checkpoints" / "best.ckpt"
            if not list(run.glob("eval_*.json")):
                evaluate([ckpt], run, extra)
            attention = describe(run).attention != "none"
            if args.dictionary and attention and not (run / "dictionary").is_dir():
                evaluate([ckpt], run / "dictionary", [*extra, "--dict", args.dictionary])
        ensembles(sweep, runs, extra)


if __name__ == "__main__":
    main()
