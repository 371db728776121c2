"""Write the analysis notebook into a folder, to run it on the runs trained there.

    python -m luong_lit notebook [FOLDER] [--force]
    jupyter nbconvert --to html --execute analysis.ipynb    # or: jupyter notebook analysis.ipynb

The notebook (``notebooks/analysis.ipynb``, shipped inside every wheel) draws Figure 5
(learning curves), Figure 6 (BLEU by length), a Table 4-style comparison, Table 6 (AER),
global / local-m / local-p heatmaps side by side, and a sentence of your own through the
Python API. It reads every run under logs/train/ of the folder it sits in (LUONG_LIT_RUNS=...
to choose others).
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

from luong_lit.cli import parser as make_parser
from luong_lit.cli import run_command
from luong_lit.errors import UsageError
from luong_lit.resources import NOTEBOOKS_DIR

NOTEBOOK = NOTEBOOKS_DIR / "analysis.ipynb"


def parser():
    ap = make_parser("notebook", __doc__)
    ap.add_argument("folder", nargs="?", default=".", help="where to write analysis.ipynb")
    ap.add_argument("--force", action="store_true", help="replace an analysis.ipynb already there")
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)

    def body() -> None:
        target = Path(args.folder) / NOTEBOOK.name
        if target.exists() and not args.force:
            raise UsageError(f"{target} exists; --force replaces it")
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(NOTEBOOK, target)
        print(f"wrote {target}; run it with: jupyter nbconvert --to html --execute {target}")

    return run_command(body)


if __name__ == "__main__":
    sys.exit(main())
