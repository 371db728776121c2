"""A row of a laid-out ladder (:func:`luong_lit.study.ladders.lay_out`), as the table
prints it and the steps' tests (:mod:`luong_lit.study.steps`) read it."""

from __future__ import annotations

from dataclasses import dataclass, field

from luong_lit.analysis.records import RunRow


@dataclass
class LadderRow:
    """One row of a laid-out ladder (:func:`lay_out`): the paper's row, ppl and BLEU; our runs
    of it (``members``: those that finished) and each measure's mean ± sd over them (``stats``);
    the "+ unk replace" row (``kind`` ``unk``) holds the last model row's runs (``unk_of``) and
    their paired gain (``paired``); the ensemble row (``ensemble``: how many checkpoints) the
    lines its report read (``ensemble_outputs``)."""

    paper_row: str
    paper_bleu: float | None
    paper_ppl: float | None = None
    kind: str = "model"  # model, unk or ensemble
    corpus: str | None = None
    runs: int = 0
    n: int = 0
    stats: dict[str, tuple] = field(default_factory=dict)  # measure: (mean, sd)
    compare: dict[str, tuple] | None = None  # what a gain is taken from, where not ``stats``
    members: list[RunRow] = field(default_factory=list)
    recipe: tuple[str | None, str] | None = None
    unk_gain: tuple = (None, None)  # each run's own gain from unk replacement: mean, sd
    best_unk: float | None = None
    paired: tuple | None = None
    unk_of: list[RunRow] = field(default_factory=list)
    ensemble: int = 0
    ensemble_outputs: tuple[list[str], list[str]] | None = None

    def stat(self, name: str) -> tuple:
        return self.stats.get(name, (None, None))
