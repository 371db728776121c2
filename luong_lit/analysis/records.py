"""The records the analysis reads from a run's files, each measurement under one name.

:class:`RunFacts` is what a run's config says it trained; :class:`RunRow` a run's facts and its
measures (:class:`Measures`), read by :func:`luong_lit.analysis.runs.collect` from the records
the run wrote (:mod:`luong_lit.reports`: ``results.json``, ``eval_TEST.json``), whose fields
have the same names: ``bleu_greedy``, ``bleu_beam``, ``bleu_beam_unk`` (after unk replacement),
chrF and TER likewise. A score an older file does not have (chrF, TER) reads as None. A row's
beam measures are those of the run's ``evaluate`` report where it has one (its test set:
:attr:`RunRow.beam_test`), else of ``results.json``.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from luong_lit.reports import DECODINGS, Evaluation, Results, Scores  # noqa: F401 - their old home

SCORES = ("bleu", "chrf", "ter")  # the scores the analysis reads: bleu_greedy, chrf_beam_unk, ...


@dataclass(kw_only=True)
class RunFacts:
    """What a run's config says it trained (:func:`luong_lit.analysis.runs.describe`)."""

    run: str
    experiment: str
    ladder: str | None = None
    changes: str = ""  # overrides beyond experiment and ladder row, e.g. model.net.init_state=copy
    attention: str = "none"
    score: str | None = None
    feed_input: bool | None = None
    seed: int | None = None
    dataset: str | None = None
    corpus: str = ""
    accelerator: str | None = None  # what it trained on (cpu, gpu): not a part of its recipe

    @property
    def label(self) -> str:
        """``attention (score)``, or ``none``."""
        return f"{self.attention} ({self.score})" if self.score else self.attention


@dataclass(kw_only=True)
class Measures:
    """A run's measured figures on its first test set (dev perplexity on the dev set, AER on
    the RWTH gold set); None where the run's files do not have them."""

    dev_ppl: float | None = None
    ppl: float | None = None
    bleu_greedy: float | None = None
    bleu_beam: float | None = None
    bleu_beam_unk: float | None = None
    chrf_greedy: float | None = None
    chrf_beam: float | None = None
    chrf_beam_unk: float | None = None
    ter_greedy: float | None = None
    ter_beam: float | None = None
    ter_beam_unk: float | None = None
    aer: float | None = None


MEASURES = tuple(f.name for f in fields(Measures))


@dataclass(kw_only=True)
class RunRow(RunFacts, Measures):
    """A run's facts and measures, the test set and beam they were measured with, the paper's
    row for the same system, the cell of seeds it belongs to and where it is."""

    test: str | None = None  # results.json's first test set
    beam_test: str | None = None  # the evaluate report's test set, where the beam measures are
    beam_width: int | None = None
    paper: dict | None = None
    cell: str = ""
    path: str = ""

    def measure(self, name: str) -> float | None:
        """The measure named ``name`` (one of :data:`MEASURES`)."""
        if name not in MEASURES:
            raise KeyError(f"{name!r} is not a measure (one of: {', '.join(MEASURES)})")
        return getattr(self, name)


def results_measures(results: Results) -> tuple[str | None, dict[str, Any]]:
    """The first test set of ``results.json`` and its measures (beam ones where it has them),
    with the dev perplexity."""
    found: dict[str, Any] = {"dev_ppl": results.dev_ppl}
    if not results.tests:
        return None, found
    name, first = next(iter(results.tests.items()))
    decodings = DECODINGS if first.bleu_beam is not None else DECODINGS[:1]
    found["ppl"] = first.ppl
    for key in (f"{m}_{d}" for m in SCORES for d in decodings):
        found[key] = first.get(key)
    return name, found


def evaluation_measures(ev: Evaluation) -> dict[str, Any]:
    """The beam measures of an ``evaluate`` report (its tokenised scores) and its beam."""
    found: dict[str, Any] = {"beam_width": ev.beam_width, "beam_test": ev.test}
    for decoding, scores in (("beam", ev.beam), ("beam_unk", ev.beam_unk)):
        if scores is not None:
            found.update({f"{m}_{decoding}": getattr(scores, f"{m}_tok") for m in SCORES})
    return found
