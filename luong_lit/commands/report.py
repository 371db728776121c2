"""Runs or whole sweeps beside the paper's numbers for the same row of Tables 1, 3, 4 and 6.

    python -m luong_lit report RUN_DIR [RUN_DIR ...] [--out report.md]
    python -m luong_lit report MULTIRUN_DIR [--out report.md] [--csv report.csv]

Run directories give one line per run. A sweep directory (``-m``) gives one line per cell: the
runs that differ only by ``seed``, as mean ± sd (``--per-run``: one line per run instead). See
:mod:`luong_lit.analysis.runs` for what is read from each run directory.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from luong_lit.analysis.cells import csv_cells, group, markdown_cells, read_run, run_dirs
from luong_lit.analysis.runs import markdown
from luong_lit.cli import parser as make_parser
from luong_lit.cli import run_command
from luong_lit.errors import DataError


def parser() -> argparse.ArgumentParser:
    ap = make_parser("report", __doc__)
    ap.add_argument("runs", nargs="+", help="run directories, or sweep directories")
    ap.add_argument("--out", help="write the Markdown here as well")
    ap.add_argument("--csv", help="write the table as CSV here")
    ap.add_argument("--per-run", action="store_true", help="one line per run, never grouped")
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)

    def body() -> None:
        try:
            dirs = run_dirs(args.runs)
            rows = [read_run(d) for d in dirs]
        except (FileNotFoundError, KeyError, json.JSONDecodeError) as err:
            raise DataError(str(err)).with_traceback(None) from None
        sweep = any(Path(r) not in dirs for r in args.runs)
        if sweep and not args.per_run:
            cells = group(rows)
            text, table = markdown_cells(cells), csv_cells(cells)
        else:
            text, table = markdown(rows), None
        if args.out:
            Path(args.out).write_text(text, encoding="utf-8")
        if args.csv:
            if table is None:
                raise DataError("--csv needs a sweep directory (the cells' table)")
            Path(args.csv).write_text(table, encoding="utf-8")
        sys.stdout.write(text)

    return run_command(body)
