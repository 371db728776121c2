"""A finished run's small outputs, copied into the repository so that its verdicts can be
recomputed on any machine without retraining.

    python -m scripts.studies.export_runs RUN DEST       # one run
    python -m scripts.studies.export_runs --sweep LOGS   # each decoded LOGS/STUDY/ROW/seedS

What is kept is what ``report`` and the paired tests read: the run's config
(``.hydra/config.yaml``, ``.hydra/overrides.yaml``), ``results.json``, the training log's
metrics (``csv/metrics.csv``), and each ``evaluate`` record with the lines BLEU read
(``eval_*.json``, ``.md``, ``.hyp``, ``.hyp_unk``, ``.ref``). Never a checkpoint. The copy is a
run folder as far as ``report`` is concerned (``python -m luong_lit report results/ladders/ours``).
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

#: where the kept outputs live
RESULTS = Path("results/ladders")
KEPT = (".hydra/config.yaml", ".hydra/overrides.yaml", "results.json", "csv/metrics.csv")
EVAL_SUFFIXES = (".json", ".md", ".hyp", ".hyp_unk", ".ref")


def kept_files(run: Path) -> list[Path]:
    """The files of ``run`` worth keeping, relative to it."""
    found = [Path(k) for k in KEPT if (run / k).is_file()]
    for f in sorted(run.glob("eval_*")):
        if f.suffix in EVAL_SUFFIXES and f.is_file():
            found.append(f.relative_to(run))
    return found


def export(run: Path, dest: Path) -> Path:
    """Copy ``run``'s kept files to ``dest`` (written whole, then moved into place)."""
    files = kept_files(run)
    if not any(f.name.startswith("eval_") and f.suffix == ".json" for f in files):
        raise FileNotFoundError(f"{run}: no evaluate record (eval_*.json) to export yet")
    tmp = dest.with_name(dest.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    for f in files:
        (tmp / f).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(run / f, tmp / f)
    shutil.rmtree(dest, ignore_errors=True)
    tmp.rename(dest)
    return dest


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run", nargs="?", type=Path)
    ap.add_argument("dest", nargs="?", type=Path)
    ap.add_argument("--sweep", type=Path, help="export every decoded LOGS/STUDY/ROW/seedS")
    args = ap.parse_args()
    if args.sweep:
        for run in sorted(args.sweep.glob("*/*/seed*")):
            if run.is_dir() and list(run.glob("eval_*.json")):
                print(export(run, RESULTS / run.relative_to(args.sweep)))
    elif args.run and args.dest:
        print(export(args.run, args.dest))
    else:
        ap.error("give RUN DEST, or --sweep LOGS")


if __name__ == "__main__":
    main()
