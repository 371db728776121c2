"""A finished run's small outputs, copied into the repository so that its verdicts can be
recomputed on any machine without retraining.

    python -m scripts.studies.export_runs RUN DEST       # one run
    python -m scripts.studies.export_runs --sweep LOGS   # each decoded LOGS/STUDY/ROW/seedS

What is kept is what ``report`` and the paired tests read: the run's config
(``.hydra/config.yaml``, ``.hydra/overrides.yaml``), ``results.json``, the training log's
metrics (``csv/metrics.csv``), and each ``evaluate`` record with the lines BLEU read
(``eval_*.json``, ``.hyp``, ``.hyp_unk``; not the ``.md`` view, which the JSON makes again).
Never a checkpoint. The references, the same for every run of a test set, are kept once, by
their content, in ``results/references/``
(:func:`keep_reference`), and the record's ``outputs.ref`` names that file relative to it, as
:meth:`luong_lit.reports.Evaluation.lines` reads it. The copy is a run folder as far as
``report`` is concerned (``python -m luong_lit report results/ladders/ours``).

    python -m scripts.studies.export_runs --share-references   # the kept runs' references, once
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
from pathlib import Path

#: where the kept outputs live
RESULTS = Path("results/ladders")
#: the references of the kept records, each once, named by its content
REFERENCES = Path("results/references")
KEPT = (".hydra/config.yaml", ".hydra/overrides.yaml", "results.json", "csv/metrics.csv")
EVAL_SUFFIXES = (".json", ".hyp", ".hyp_unk", ".ref")  # the Markdown view: made from .json


def keep_reference(record: Path, references: Path = REFERENCES) -> bool:
    """Keep the references of the ``evaluate`` record ``record`` (``eval_*.json``) once in
    ``references`` (``<sha256 prefix>.ref``), its ``outputs.ref`` rewritten to name that file
    relative to the record and the record's own copy removed; False where it names none."""
    report = json.loads(record.read_text(encoding="utf-8"))
    name = (report.get("outputs") or {}).get("ref")
    own = record.parent / name if name else None
    if own is None or not own.is_file() or own.resolve().parent == references.resolve():
        return False
    data = own.read_bytes()
    shared = references / f"{hashlib.sha256(data).hexdigest()[:16]}.ref"
    references.mkdir(parents=True, exist_ok=True)
    if not shared.is_file():
        shared.write_bytes(data)
    report["outputs"]["ref"] = os.path.relpath(shared, record.parent)
    record.write_text(json.dumps(report, indent=2), encoding="utf-8")  # as evaluate writes it
    own.unlink()
    return True


def kept_files(run: Path) -> list[Path]:
    """The files of ``run`` worth keeping, relative to it."""
    found = [Path(k) for k in KEPT if (run / k).is_file()]
    for f in sorted(run.glob("eval_*")):
        if f.suffix in EVAL_SUFFIXES and f.is_file():
            found.append(f.relative_to(run))
    return found


def export(run: Path, dest: Path, references: Path = REFERENCES) -> Path:
    """Copy ``run``'s kept files to ``dest`` (written whole, then moved into place), its
    references kept once in ``references``."""
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
    for record in sorted(dest.glob("eval_*.json")):
        keep_reference(record, references)
    return dest


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run", nargs="?", type=Path)
    ap.add_argument("dest", nargs="?", type=Path)
    ap.add_argument("--sweep", type=Path, help="export every decoded LOGS/STUDY/ROW/seedS")
    ap.add_argument("--share-references", action="store_true",
                    help="keep every kept record's references once")  # fmt: skip
    args = ap.parse_args()
    if args.share_references:
        moved = sum(keep_reference(r) for r in sorted(RESULTS.glob("**/eval_*.json")))
        print(f"{moved} records' references kept once in {REFERENCES}")
    elif args.sweep:
        for run in sorted(args.sweep.glob("*/*/seed*")):
            if run.is_dir() and list(run.glob("eval_*.json")):
                print(export(run, RESULTS / run.relative_to(args.sweep)))
    elif args.run and args.dest:
        print(export(args.run, args.dest))
    else:
        ap.error("give RUN DEST, or --sweep LOGS")


if __name__ == "__main__":
    main()
