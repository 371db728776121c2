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
