"""A Markdown table of runs beside the paper's numbers for the same row of Tables 1, 3, 4 and 6.

    python -m luong_lit report RUN_DIR [RUN_DIR ...] [--out report.md]

See :mod:`luong_lit.analysis.runs` for what is read from each run directory.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from luong_lit.analysis.runs import collect, markdown
from luong_lit.cli import run_command
from luong_lit.errors import DataError


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m luong_lit report", description=__doc__.split("\n")[0]
    )
    ap.add_argument("runs", nargs="+", help="run directories")
    ap.add_argument("--out", help="write the Markdown here as well")
    args = ap.parse_args(argv)

    def body() -> None:
        try:
            rows = [collect(Path(r)) for r in args.runs]
        except (FileNotFoundError, KeyError, json.JSONDecodeError) as err:
            raise DataError(str(err)) from None
        text = markdown(rows)
        if args.out:
            Path(args.out).write_text(text, encoding="utf-8")
        sys.stdout.write(text)

    return run_command(body)


if __name__ == "__main__":
    sys.exit(main())
