"""The cells of a ladder table as text (:func:`luong_lit.study.ladders.markdown_ladder`): its
head, a row's runs, a mean ± sd, a gain, the paper's gain, and where the runs trained."""

from __future__ import annotations

from collections.abc import Sequence

from luong_lit.analysis.cells import pm
from luong_lit.study.rows import LadderRow

NOT_RUN = "not run yet"
HEAD = (
    "paper row | our corpus | runs | dev ppl | test ppl | greedy BLEU | beam BLEU | + unk"
    " | test SE | gain [95 % CI] | p (Holm) | verdict | paper corpus | paper ppl | paper BLEU"
    " | paper gain"
)
RULE = "|---|---|---:|" + "---:|" * 8 + "---|---|---:|---:|---:|"


def mean_pm(pair: tuple | None) -> str:
    """:func:`~luong_lit.analysis.cells.pm`, an sd of 0 (one system) left out."""
    mean, sd = pair or (None, None)
    return pm((mean, sd or None))


def gain_text(found: tuple | None) -> str:
    if found is None:
        return "–"
    diff, spread, kind = found
    return f"{diff:+.2f}" + (f" ± {spread:.2f}" if spread is not None else "") + f" ({kind})"


def runs_text(row: LadderRow) -> str:
    if not row.n:
        return NOT_RUN
    if row.ensemble:
        return f"ensemble of {row.ensemble}"
    return str(row.n) if row.n == row.runs else f"{row.n} of {row.runs}"


def one(x: float | None, fmt: str = "{:.1f}") -> str:
    return "–" if x is None else fmt.format(x)


def paper_gain(above: LadderRow | None, row: LadderRow) -> str:
    """The paper's gain, from its BLEU of the two rows (as printed in Tables 1 and 3)."""
    if not above or row.paper_bleu is None or above.paper_bleu is None:
        return "–"
    return one(row.paper_bleu - above.paper_bleu, "{:+.1f}")


def hardware(laid: Sequence[LadderRow]) -> str:
    """Where the table's runs trained, when not all on a CPU: ", runs on a GPU: 6 of 11"."""
    where = [m.accelerator or "cpu" for row in laid for m in row.members]
    gpu = sum(a in ("gpu", "cuda") for a in where)
    return f", runs trained on a GPU: {gpu} of {len(where)}" if gpu else ""
