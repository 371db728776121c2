"""Each step of a ladder judged by a test: the paired bootstrap of
:mod:`luong_lit.metrics.significance` on the test-set outputs of the two rows' runs, the seeds
pooled (paired seed by seed: the runs of the two rows with the same seed).

A run's outputs are the lines its own ``evaluate`` report read (``eval_TEST.hyp``, and
``eval_TEST.hyp_unk`` after unknown-word replacement, beside ``eval_TEST.ref``). An ensemble's
are those of its own report. Where either side has no outputs, the step has no test.
"""

from __future__ import annotations

import json
from pathlib import Path

from luong_lit.analysis.runs import own_evals
from luong_lit.metrics.significance import Paired, paired_bootstrap, pooled, verdict


def report_outputs(report: Path, kind: str) -> tuple[list[str], list[str]] | None:
    """An ``evaluate`` report's output lines of ``kind`` (``hyp``, ``hyp_unk``) and references."""
    names = json.loads(report.read_text(encoding="utf-8")).get("outputs") or {}
    if kind not in names or "ref" not in names:
        return None
    paths = [report.parent / names[kind], report.parent / names["ref"]]
    if not all(p.is_file() for p in paths):
        return None
    hyp, ref = (p.read_text(encoding="utf-8").splitlines() for p in paths)
    return hyp, ref


def run_outputs(run: Path, kind: str) -> tuple[list[str], list[str]] | None:
    """The run's own outputs of ``kind`` on its first evaluated test set, or None."""
    reports = own_evals(Path(run))
    return report_outputs(reports[0], kind) if reports else None


def _by_seed(members: list[dict], kind: str) -> dict:
    found = {}
    for m in members:
        out = run_outputs(Path(m["path"]), kind) if m.get("path") else None
        if out is not None:
            found[m["seed"]] = out
    return found


def _pairs(above: dict, row: dict) -> list[tuple]:
    """``(baseline, system, refs)`` per seed for the step from ``above`` to ``row``."""
    if row.get("unk_of"):  # the same runs decoded again with unk replacement
        plain, replaced = _by_seed(row["unk_of"], "hyp"), _by_seed(row["unk_of"], "hyp_unk")
        return [(plain[s][0], replaced[s][0], plain[s][1]) for s in plain if s in replaced]
    if row.get("ensemble_outputs"):  # one system: beside each seed of the row above
        hyp, ref = row["ensemble_outputs"]
        above_runs = above.get("unk_of") or above.get("members") or []
        return [(h, hyp, r) for h, r in _by_seed(above_runs, "hyp_unk").values() if r == ref]
    a, b = _by_seed(above.get("members", []), "hyp"), _by_seed(row.get("members", []), "hyp")
    return [(a[s][0], b[s][0], a[s][1]) for s in sorted(a, key=str) if s in b]


def step_test(above: dict, row: dict) -> tuple[Paired, str, int] | None:
    """The paired bootstrap of the step from ``above`` to ``row``, its verdict and the number
    of seeds pooled; None where the outputs to test are missing."""
    pairs = _pairs(above, row)
    if not pairs:
        return None
    found = paired_bootstrap(*pooled(pairs))
    return found, verdict(found), len(pairs)


def verdict_cells(found: tuple[Paired, str, int] | None) -> tuple[str, str]:
    """The table's ``p`` and ``verdict`` cells."""
    if found is None:
        return "–", "–"
    paired, said, seeds = found
    p = "< 0.001" if paired.p < 0.001 else f"{paired.p:.3f}"
    return f"{p} ({seeds} seed{'s' if seeds > 1 else ''})", said
