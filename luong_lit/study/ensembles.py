"""The ladders' ensembles: a report of ``python -m luong_lit evaluate CKPT1 CKPT2 ... --test TEST
--replace-unk`` (an :class:`~luong_lit.reports.Evaluation`) found beside a sweep's
runs (``ensemble_table1/``, an ``evaluate --out`` folder, or ``ensemble_table1.json``; ``table3``
likewise) or given to ``report`` as ``--ensemble FILE`` or ``--ensemble table1=FILE``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from pathlib import Path

from luong_lit.analysis.runs import describe, is_run
from luong_lit.errors import DataError
from luong_lit.paper.numbers import LADDERS
from luong_lit.reports import Evaluation
from luong_lit.study.ladders import ladder_table


def read_ensemble(path: str | Path) -> Evaluation:
    """A report of ``python -m luong_lit evaluate`` as the ensemble row reads it; one line
    naming the file where it is not one (or has no BLEU before and after unk replacement)."""
    found = Evaluation.read(path)
    if found.beam is None or found.beam_unk is None:
        raise DataError(f"{path}: not a report of `python -m luong_lit evaluate` (no BLEU in it)")
    return found


def ensemble_table(ensemble: Evaluation) -> str:
    """``table1`` or ``table3``: the ladder of the runs all the ensemble's checkpoints are in."""
    runs = [Path(c).parent.parent for c in ensemble.checkpoints]
    tables = {ladder_table(describe(r).ladder) if is_run(r) else None for r in runs}
    if len(tables) != 1 or None in tables:
        raise DataError(
            f"{ensemble.path}: its checkpoints are not all in runs of one ladder; "
            "name its table: --ensemble table1=FILE (or table3=FILE)"
        )
    return tables.pop()  # type: ignore[return-value]


def find_ensembles(
    folders: Iterable[str | Path], given: Sequence[str] = ()
) -> dict[str, Evaluation]:
    """The tables' ensembles: ``ensemble_table1/`` (an ``evaluate --out`` folder) or
    ``ensemble_table1.json`` (``table3`` likewise) in the folders, then each of ``given``
    (``FILE`` or ``table1=FILE``), which wins."""
    out = {}
    for folder, table in ((Path(f), t) for f in folders for t in LADDERS):
        made = sorted((folder / f"ensemble_{table}").glob("eval_*_ensemble.json"))
        path = made[0] if made else folder / f"ensemble_{table}.json"
        if path.is_file():
            out[table] = read_ensemble(path)
    for spec in given:
        named = re.fullmatch(r"(table\d+)=(.+)", spec)
        ensemble = read_ensemble(named.group(2) if named else spec)
        table = named.group(1) if named else ensemble_table(ensemble)
        if table not in LADDERS:
            raise DataError(f"--ensemble {spec}: {table} is not a ladder (table1 or table3)")
        out[table] = ensemble
    return out
