"""What the Python API answers: translations with their scores (:class:`Output`,
:class:`Scored`) and given translations scored token by token (:class:`TokenScores`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from luong_lit.translator.attention import AttentionMap


class Scored(NamedTuple):
    """A translation and its score (the sum of its words' log-probabilities; None for greedy)."""

    text: str
    score: float | None


class TokenScores(NamedTuple):
    """A given translation scored: ``log p(tgt | src)`` and, for each target token as the model
    reads it (``</s>`` last), ``log p(y_t | y_<t, x)``."""

    score: float
    tokens: list[str]
    logprobs: list[float]


@dataclass
class Output:
    """One input line translated: the best text, the ``n`` best with scores, whether the source
    was cut to ``max_src_len``, and (when asked) the attention of the best translation."""

    text: str
    hypotheses: list[Scored]
    truncated: bool = False
    attention: AttentionMap | None = None

    def lines(self, index: int, n_best: int) -> list[str]:
        """This line's output lines: its translation, or with ``n_best`` above 1 its list as
        ``index ||| text ||| score`` lines (Moses' and fairseq's n-best format)."""
        if n_best > 1:
            return [f"{index} ||| {h.text} ||| {h.score or 0.0:.4f}" for h in self.hypotheses]
        return [self.text]

    def attention_line(self) -> str:
        """Each output word with the source word it attended to most (``word→source``)."""
        att = self.attention
        return self.text if att is None or not att.source else att.arrows()
