"""The records a run and an evaluation write, each measurement under one name.

``results.json`` is a :class:`Results` (a test set's figures: :class:`TestFigures`), a report
of ``python -m luong_lit evaluate`` (``eval_TEST.json``) an :class:`Evaluation` (an output's
scores: :class:`Scores`). The writers build these records and serialise them (``to_json``);
the readers read them back (``from_json``, ``read``). A figure's key in a file is its field's
name here, and a logged metric has the same name (``test/NAME/bleu_beam_unk``,
``val/bleu_beam_unk``):

================================  ==============================  =========================
measure (tokenised)               results.json, logged            eval_TEST.json
================================  ==============================  =========================
greedy BLEU, chrF, chrF++, TER    ``bleu_greedy``, ``chrf_greedy``  –
beam                              ``bleu_beam``, ...              ``beam.bleu_tok``, ...
beam, after unk replacement       ``bleu_beam_unk``, ...          ``beam_unk.bleu_tok``, ...
================================  ==============================  =========================

Files written before these names were one keep their old names (``bleu_unk_beam``; an
evaluate report's ``bleu`` and ``bleu_unk_replaced``): :data:`OLD_NAMES` is the one table that
maps them, read by ``from_json`` and by the check of a monitor's name.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from luong_lit.errors import ConfigError, DataError

METRICS = ("bleu", "chrf", "chrfpp", "ter")  # each output's scores, in this order
DECODINGS = ("greedy", "beam", "beam_unk")  # the outputs a run scores on each test set

#: the one table of older names, by the file that held them: ``results.json``'s test figures
#: (and the metrics logged under ``test/NAME/`` and ``val/``), and an ``evaluate`` report's keys
OLD_NAMES: dict[str, dict[str, str]] = {
    "results": {f"{m}_unk_beam": f"{m}_beam_unk" for m in METRICS},
    "evaluate": {"bleu": "beam", "bleu_unk_replaced": "beam_unk"},
}


def figure_name(metric: str, decoding: str) -> str:
    """A test figure's (and logged metric's) name: ``bleu_beam_unk``, ``chrf_greedy``."""
    return f"{metric}_{decoding}"


def current_name(name: str) -> str | None:
    """The name a logged metric of an older run now has (``val/bleu_unk_beam`` ->
    ``val/bleu_beam_unk``), or None where ``name`` is not an old one."""
    head, _, last = name.rpartition("/")
    new = OLD_NAMES["results"].get(last)
    return None if new is None else f"{head}/{new}" if head else new


def check_current_name(option: str, name: str | None) -> None:
    """Refuse an older name of a figure (:data:`OLD_NAMES`) with its new one, in one line (a
    monitor, the sweep's ``objective``)."""
    renamed = None if name is None else current_name(name)
    if renamed is not None:
        raise ConfigError(
            f"{option}={name}: this figure is now named {renamed}; set that (a run resumed "
            f"with it starts its best checkpoint and early stopping's count afresh)"
        )


def _renamed(found: Mapping[str, Any], file: str) -> dict[str, Any]:
    table = OLD_NAMES[file]
    return {table.get(k, k): v for k, v in found.items()}


def _kept(record: Any, skip: tuple[str, ...] = ()) -> dict[str, Any]:
    """A record's fields as JSON, in their order, without those that are None."""
    return {
        f.name: getattr(record, f.name)
        for f in fields(record)
        if f.name not in skip and getattr(record, f.name) is not None
    }


@dataclass(frozen=True)
class Scores:
    """One output's scores against the references, tokenised and detokenised (an evaluate
    report's ``beam``: before unk replacement, or ``beam_unk``: after)."""

    bleu_tok: float | None = None
    bleu_detok: float | None = None
    chrf_tok: float | None = None
    chrfpp_tok: float | None = None
    ter_tok: float | None = None
    chrf_detok: float | None = None
    chrfpp_detok: float | None = None
    ter_detok: float | None = None

    @classmethod
    def from_json(cls, found: Mapping[str, Any]) -> Scores:
        return cls(**{f.name: found[f.name] for f in fields(cls) if f.name in found})

    def to_json(self) -> dict[str, float]:
        return _kept(self)


def _scores(found: Mapping[str, Any] | None) -> Scores | None:
    return None if found is None else Scores.from_json(found)


def _floats(found: Any) -> tuple[float, ...]:
    """A report's perplexities: a list (one per model), a number, or none."""
    return tuple(found) if isinstance(found, list) else () if found is None else (found,)


def _read(path: str | Path, what: str) -> dict[str, Any]:
    """The JSON object in ``path``; one line naming the file where it is not one."""
    try:
        found = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise DataError(f"{path}: not {what} ({type(err).__name__}: {err})") from None
    if not isinstance(found, dict):
        raise DataError(f"{path}: not {what} (a JSON {type(found).__name__}, not an object)")
    return found


@dataclass(frozen=True)
class Evaluation:
    """A report of ``evaluate``: the checkpoints, test set, perplexities, decoding, the beam
    output's scores before (``beam``) and after (``beam_unk``) unknown-word replacement and
    their sacreBLEU signatures, what BLEU compared, how good the replacements were, BLEU by
    source length, sample translations, and the names of the files of lines written beside it
    (``outputs``: ``hyp``, ``hyp_unk``, ``ref``, ``src``). ``path``: where it was read from."""

    test: str | None = None
    checkpoints: tuple[str, ...] = ()
    ppl: tuple[float, ...] = ()
    ppl_ensemble: float | None = None
    decoding: Mapping[str, Any] = field(default_factory=dict)
    beam: Scores | None = None  # None: a report without scores (a figure's, written by hand)
    beam_unk: Scores | None = None
    signatures: Mapping[str, str] = field(default_factory=dict)
    detok_references: str | None = None
    compared: str | None = None
    unk_in_output: int | None = None
    unk_replacement: Mapping[str, Any] | None = None
    length_buckets: list[dict[str, Any]] | None = None
    samples: list[dict[str, str]] = field(default_factory=list)
    outputs: Mapping[str, str] = field(default_factory=dict)
    path: Path | None = None

    @property
    def beam_width(self) -> int | None:
        return self.decoding.get("beam")

    @property
    def model_ppl(self) -> float | None:
        """The ensemble's own perplexity, else the (first) model's."""
        return self.ppl_ensemble if self.ppl_ensemble is not None else next(iter(self.ppl), None)

    @classmethod
    def from_json(cls, report: Mapping[str, Any], path: str | Path | None = None) -> Evaluation:
        found = _renamed(report, "evaluate")
        known = {f.name for f in fields(cls)} - {"path"}
        kept = {k: v for k, v in found.items() if k in known and v is not None}
        kept["checkpoints"] = tuple(str(c) for c in kept.get("checkpoints", ()))
        kept["ppl"] = _floats(kept.get("ppl"))
        kept["beam"], kept["beam_unk"] = _scores(kept.get("beam")), _scores(kept.get("beam_unk"))
        return cls(**kept, path=None if path is None else Path(path))

    def to_json(self) -> dict[str, Any]:
        """The report as ``evaluate`` writes it (``eval_TEST.json``)."""
        out = _kept(self, skip=("path",))
        out["checkpoints"], out["ppl"] = list(self.checkpoints), list(self.ppl)
        for key in ("beam", "beam_unk"):
            if key in out:
                out[key] = out[key].to_json()
        return {k: dict(v) if isinstance(v, Mapping) else v for k, v in out.items()}

    @classmethod
    def read(cls, path: str | Path) -> Evaluation:
        """The report at ``path``; one line naming the file where it is not one."""
        what = "a report of `python -m luong_lit evaluate`"
        found = _read(path, what)
        try:
            return cls.from_json(found, Path(path))
        except (ValueError, KeyError, TypeError, AttributeError) as err:
            raise DataError(f"{path}: not {what} ({type(err).__name__}: {err})") from None

    def lines(self, kind: str) -> tuple[list[str], list[str]] | None:
        """The output lines of ``kind`` (``hyp``, ``hyp_unk``, ``src``) and the references,
        from the files beside the report; None where they were not written."""
        if self.path is None or kind not in self.outputs or "ref" not in self.outputs:
            return None
        paths = [self.path.parent / self.outputs[kind], self.path.parent / self.outputs["ref"]]
        if not all(p.is_file() for p in paths):
            return None
        hyp, ref = (p.read_text(encoding="utf-8").splitlines() for p in paths)
        return hyp, ref


@dataclass(frozen=True)
class TestFigures:
    """What a run's final test measured on one test set (``results.json``'s group of it), each
    figure exact as computed: perplexity, the sentences each figure counts, and BLEU, chrF,
    chrF++ and TER of the greedy output, the beam output and the beam output after unknown-word
    replacement. ``others``: figures a user's own callback logged there."""

    ppl: float | None = None
    sentences_ppl: int | None = None
    sentences_bleu: int | None = None
    bleu_greedy: float | None = None
    chrf_greedy: float | None = None
    chrfpp_greedy: float | None = None
    ter_greedy: float | None = None
    bleu_beam: float | None = None
    chrf_beam: float | None = None
    chrfpp_beam: float | None = None
    ter_beam: float | None = None
    bleu_beam_unk: float | None = None
    chrf_beam_unk: float | None = None
    chrfpp_beam_unk: float | None = None
    ter_beam_unk: float | None = None
    others: Mapping[str, float] = field(default_factory=dict)

    @classmethod
    def from_json(cls, found: Mapping[str, Any]) -> TestFigures:
        """The figures of ``found`` (``results.json``'s group, or what the test logged), read
        under their current names; the sentence counts as integers."""
        named = _renamed(found, "results")
        known = {f.name for f in fields(cls)} - {"others"}
        kept: dict[str, Any] = {k: v for k, v in named.items() if k in known}
        for key in ("sentences_ppl", "sentences_bleu"):
            if kept.get(key) is not None:
                kept[key] = int(kept[key])
        others = {k: v for k, v in named.items() if k not in known}
        return cls(**kept, others=others)

    def to_json(self) -> dict[str, Any]:
        """The group as ``results.json`` holds it: the figures by name, sorted."""
        return dict(sorted({**_kept(self, skip=("others",)), **self.others}.items()))

    def get(self, name: str) -> float | None:
        """The figure named ``name`` (a field's name, or one of :attr:`others`)."""
        return self.others[name] if name in self.others else getattr(self, name, None)


@dataclass(frozen=True)
class Results:
    """A run's ``results.json``: the checkpoint its test used, its dev perplexity, each test
    set's :class:`TestFigures`, sacreBLEU's signature of each score (by metric: ``bleu``,
    ``chrf``, ...) and the value a sweeper optimises."""

    checkpoint: str = "final weights"
    dev_ppl: float | None = None
    tests: Mapping[str, TestFigures] = field(default_factory=dict)
    signatures: Mapping[str, str] = field(default_factory=dict)
    objective: str | None = None
    objective_value: float | None = None

    @classmethod
    def from_json(cls, found: Mapping[str, Any]) -> Results:
        tail = "_signature"
        return cls(
            checkpoint=found.get("checkpoint", "final weights"), dev_ppl=found.get("dev_ppl"),
            tests={k: TestFigures.from_json(v) for k, v in found.items() if isinstance(v, dict)},
            signatures={k[: -len(tail)]: v for k, v in found.items() if k.endswith(tail)},
            objective=found.get("objective"), objective_value=found.get("objective_value"),
        )  # fmt: skip

    def to_json(self) -> dict[str, Any]:
        """``results.json`` as a run writes it (``objective`` and its value where either is set)."""
        out: dict[str, Any] = {"checkpoint": self.checkpoint}
        if self.dev_ppl is not None:
            out["dev_ppl"] = self.dev_ppl
        out.update({name: figures.to_json() for name, figures in self.tests.items()})
        out.update({f"{k}_signature": v for k, v in self.signatures.items()})
        if self.objective is not None or self.objective_value is not None:
            out.update(objective=self.objective, objective_value=self.objective_value)
        return out

    @classmethod
    def read(cls, path: str | Path) -> Results:
        """The ``results.json`` at ``path``; one line naming the file where it is not one."""
        found = _read(path, "a run's results.json")
        try:
            return cls.from_json(found)
        except (ValueError, KeyError, TypeError, AttributeError) as err:
            kind = type(err).__name__
            raise DataError(f"{path}: not a run's results.json ({kind}: {err})") from None
