"""The output lines ``evaluate`` keeps beside its report (``eval_TEST.hyp``, and
``eval_TEST.hyp_unk`` after unknown-word replacement, beside ``eval_TEST.ref``): a report's
(:func:`report_outputs`) and a run's own (:func:`run_outputs`), read for paired tests and
sample translations.
"""

from __future__ import annotations

from pathlib import Path

from luong_lit.analysis.runs import own_evals
from luong_lit.reports import Evaluation


def report_outputs(report: Path, kind: str) -> tuple[list[str], list[str]] | None:
    """An ``evaluate`` report's output lines of ``kind`` (``hyp``, ``hyp_unk``) and references."""
    return Evaluation.read(report).lines(kind)


def run_outputs(run: Path, kind: str) -> tuple[list[str], list[str]] | None:
    """The run's own outputs of ``kind`` on its first evaluated test set, or None."""
    reports = own_evals(Path(run))
    return report_outputs(reports[0], kind) if reports else None
