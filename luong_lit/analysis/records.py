"""The records the analysis reads from a run's files, each measurement under one name.

:class:`Evaluation` is a report of ``python -m luong_lit evaluate`` (``eval_TEST.json``);
:class:`RunFacts` what a run's config says it trained; :class:`RunRow` a run's facts and its
measures (:class:`Measures`), read by :func:`luong_lit.analysis.runs.collect`.

The files keep the names they were written with, so that older runs, dashboards and the
early-stopping monitors read as before; this module is the one place that maps them to the
one name each measurement has in the analysis:

======================================  ==================  ===============================
measure (tokenised, first test set)     results.json        eval_TEST.json
======================================  ==================  ===============================
``bleu_greedy``, ``chrf_`` / ``ter_``   ``bleu_greedy``     –
``bleu_beam``                           ``bleu_beam``       ``bleu.bleu_tok``
``bleu_beam_unk`` (after unk replaced)  ``bleu_unk_beam``   ``bleu_unk_replaced.bleu_tok``
======================================  ==================  ===============================

chrF and TER follow BLEU's names (``chrf_beam_unk``: ``chrf_unk_beam``, ``chrf_tok``). A score
an older file does not have (chrF, TER) reads as None, and a report that named no output files
has no :meth:`Evaluation.lines`. A row's beam measures are those of the run's ``evaluate``
report where it has one (its test set: :attr:`RunRow.beam_test`), else of ``results.json``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from luong_lit.errors import DataError

SCORES = ("bleu", "chrf", "ter")  # each decoding's scores: bleu_greedy, chrf_beam_unk, ...
DECODINGS = ("greedy", "beam", "beam_unk")


@dataclass(frozen=True)
class Scores:
    """One output's scores against the references, tokenised and detokenised (an evaluate
    report's ``bleu`` group: before unk replacement, or ``bleu_unk_replaced``: after)."""

    bleu_tok: float | None = None
    bleu_detok: float | None = None
    chrf_tok: float | None = None
    chrf_detok: float | None = None
    chrfpp_tok: float | None = None
    chrfpp_detok: float | None = None
    ter_tok: float | None = None
    ter_detok: float | None = None

    @classmethod
    def from_json(cls, found: Mapping[str, Any]) -> Scores:
        return cls(**{f.name: found[f.name] for f in fields(cls) if f.name in found})


def _floats(found: Any) -> tuple[float, ...]:
    """A report's perplexities: a list (one per model), a number, or none."""
    return tuple(found) if isinstance(found, list) else () if found is None else (found,)


def _scores(found: Mapping[str, Any] | None) -> Scores | None:
    return None if found is None else Scores.from_json(found)


@dataclass(frozen=True)
class Evaluation:
    """A report of ``evaluate``: the checkpoints, test set, decoding, perplexities, the beam
    output's scores before (``beam``) and after (``beam_unk``) unknown-word replacement, BLEU
    by source length, and the names of the output files written beside it."""

    path: Path
    test: str | None
    checkpoints: tuple[str, ...]
    decoding: Mapping[str, Any]
    ppl: tuple[float, ...]
    ppl_ensemble: float | None
    beam: Scores | None  # None: a report without scores (a figure's, written by hand)
    beam_unk: Scores | None
    length_buckets: list[dict] | None = None
    outputs: Mapping[str, str] = field(default_factory=dict)

    @property
    def beam_width(self) -> int | None:
        return self.decoding.get("beam")

    @property
    def model_ppl(self) -> float | None:
        """The ensemble's own perplexity, else the (first) model's."""
        return self.ppl_ensemble if self.ppl_ensemble is not None else next(iter(self.ppl), None)

    @classmethod
    def from_json(cls, report: Mapping[str, Any], path: Path) -> Evaluation:
        return cls(
            path=Path(path), test=report.get("test"),
            checkpoints=tuple(str(c) for c in report.get("checkpoints", [])),
            decoding=report.get("decoding") or {}, ppl=_floats(report.get("ppl")),
            ppl_ensemble=report.get("ppl_ensemble"),
            beam=_scores(report.get("bleu")), beam_unk=_scores(report.get("bleu_unk_replaced")),
            length_buckets=report.get("length_buckets"), outputs=report.get("outputs") or {},
        )  # fmt: skip

    @classmethod
    def read(cls, path: str | Path) -> Evaluation:
        """The report at ``path``; one line naming the file where it is not one."""
        try:
            return cls.from_json(json.loads(Path(path).read_text(encoding="utf-8")), Path(path))
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as err:
            kind = type(err).__name__
            raise DataError(
                f"{path}: not a report of `python -m luong_lit evaluate` ({kind}: {err})"
            ) from None

    def lines(self, kind: str) -> tuple[list[str], list[str]] | None:
        """The output lines of ``kind`` (``hyp``, ``hyp_unk``, ``src``) and the references,
        from the files beside the report; None where they were not written."""
        if kind not in self.outputs or "ref" not in self.outputs:
            return None
        paths = [self.path.parent / self.outputs[kind], self.path.parent / self.outputs["ref"]]
        if not all(p.is_file() for p in paths):
            return None
        hyp, ref = (p.read_text(encoding="utf-8").splitlines() for p in paths)
        return hyp, ref


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


#: results.json's name of each measure that it holds under another name (the metric names
#: ``trainer.test`` logs: ``test/NAME/bleu_unk_beam``)
LOGGED = {f"{m}_beam_unk": f"{m}_unk_beam" for m in SCORES}


def results_measures(results: Mapping[str, Any]) -> tuple[str | None, dict[str, Any]]:
    """The first test set of ``results.json`` and its measures (beam ones where it has them),
    with the dev perplexity."""
    found: dict[str, Any] = {"dev_ppl": results.get("dev_ppl")}
    tests = {k: v for k, v in results.items() if isinstance(v, dict)}
    if not tests:
        return None, found
    name, first = next(iter(tests.items()))
    decodings = DECODINGS if "bleu_beam" in first else DECODINGS[:1]
    found["ppl"] = first.get("ppl")
    for key in (f"{m}_{d}" for m in SCORES for d in decodings):
        found[key] = first.get(LOGGED.get(key, key))
    return name, found


def evaluation_measures(ev: Evaluation) -> dict[str, Any]:
    """The beam measures of an ``evaluate`` report (its tokenised scores) and its beam."""
    found: dict[str, Any] = {"beam_width": ev.beam_width, "beam_test": ev.test}
    for decoding, scores in (("beam", ev.beam), ("beam_unk", ev.beam_unk)):
        if scores is not None:
            found.update({f"{m}_{decoding}": getattr(scores, f"{m}_tok") for m in SCORES})
    return found
