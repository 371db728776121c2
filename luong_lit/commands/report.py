"""Runs or whole sweeps beside the paper's numbers for the same row of Tables 1, 3, 4 and 6.

    python -m luong_lit report RUN_DIR [RUN_DIR ...] [--out report.md]
    python -m luong_lit report MULTIRUN_DIR [--out report.md] [--csv report.csv]
    python -m luong_lit report LADDER_SWEEP_DIR [--ensemble [table1=]ENSEMBLE.json]

Run directories give one line per run. A sweep directory (``-m``) gives one line per cell: the
runs that differ only by ``seed``, as mean ± sd (``--per-run``: one line per run instead). chrF
and TER (tokenised, as the BLEU beside them) follow BLEU where a run's ``results.json`` or
``evaluate`` report has them (older ones: blank; ``--csv``: their mean and sd too). See
:mod:`luong_lit.analysis.runs` for what is read from each run directory.

Ladder runs (``python -m luong_lit.train -m 'ladder=glob(table*)' seed=1234,2``) are laid out
as the paper's Table 1 and Table 3 first: each row's mean ± sd over seeds, its BLEU gain over
the row above (± sqrt(sd_a² + sd_b²)) beside the paper's, rows not finished marked "not run
yet", then "+ unk replace" and the ensemble row. The ensemble is the JSON report of
``python -m luong_lit evaluate CKPT1 CKPT2 ... --test TEST --out SWEEP/ensemble_table1`` (or
``_table3``), found there or given with ``--ensemble`` (see
:mod:`luong_lit.study.ensembles`). Each step's gain is judged by a two-level bootstrap
over both rows' seeds and the test sentences (``evaluate`` keeps the outputs beside its
report; :mod:`luong_lit.study.steps`): its 95 % interval, its two-sided p corrected by
Holm's method over the table, and its verdict. Other runs follow in the table above.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from luong_lit.analysis.cells import csv_cells, group, markdown_cells, run_dirs
from luong_lit.analysis.records import RunRow
from luong_lit.analysis.runs import collect, markdown
from luong_lit.cli import parser as make_parser
from luong_lit.cli import run_command
from luong_lit.errors import DataError
from luong_lit.study.ensembles import find_ensembles
from luong_lit.study.ladders import markdown_ladders


def parser() -> argparse.ArgumentParser:
    ap = make_parser("report", __doc__)
    ap.add_argument("runs", nargs="+", help="run directories, or sweep directories")
    ap.add_argument("--out", help="write the Markdown here as well")
    ap.add_argument("--csv", help="write the table as CSV here")
    ap.add_argument("--per-run", action="store_true", help="one line per run, never grouped")
    ap.add_argument(
        "--pair-seeds",
        action="store_true",
        help="test rows trained with the same seeds seed by seed",
    )
    ap.add_argument(
        "--ensemble",
        action="append",
        metavar="[TABLE=]FILE",
        help="an ensemble's report of `evaluate CKPT1 CKPT2 ... --replace-unk` for the ladder's "
        "ensemble row; TABLE (table1 or table3) unset: the ladder of its checkpoints' runs "
        "(unset: ensemble_table1/ or ensemble_table1.json in the sweep directory; table3 likewise)",
    )
    return ap


def tables(
    rows: list[RunRow], sweep: bool, per_run: bool, ensembles: list, pair_seeds: bool = False
) -> tuple[str, str | None]:
    """The Markdown (ladders first, Tables 1 and 3, then the other runs) and the cells' CSV."""
    ladder = [r for r in rows if r.ladder] if not per_run else []
    others = [r for r in rows if r not in ladder]
    wanted = ladder or (ensembles and not per_run)
    text = markdown_ladders(ladder, ensembles, pair_seeds) if wanted else ""
    if others:
        body = markdown_cells(group(others)) if sweep and not per_run else markdown(others)
        text += ("\n" if text else "") + body
    return text, csv_cells(group(rows)) if sweep and not per_run else None


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)

    def body() -> None:
        for gone in (r for r in args.runs if not Path(r).exists()):
            raise DataError(f"{gone}: does not exist")
        try:
            dirs = run_dirs(args.runs)
            rows = [collect(d) for d in dirs]
        except (FileNotFoundError, KeyError, json.JSONDecodeError) as err:
            raise DataError(str(err)).with_traceback(None) from None
        sweeps = [r for r in args.runs if Path(r) not in dirs]
        ensembles = list(find_ensembles([], args.ensemble or []).items())  # given ones first
        ensembles += [pair for s in sweeps for pair in find_ensembles([s]).items()]
        text, table = tables(rows, bool(sweeps), args.per_run, ensembles, args.pair_seeds)
        if args.out:
            Path(args.out).write_text(text, encoding="utf-8")
        if args.csv:
            if table is None:
                raise DataError("--csv needs a sweep directory (the cells' table)")
            Path(args.csv).write_text(table, encoding="utf-8")
        sys.stdout.write(text)

    return run_command(body)
