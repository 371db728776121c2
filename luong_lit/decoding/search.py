"""What a search is asked for, and what it finds: two frozen records, beam search
(:class:`BeamSearch`, greedy search its width-1 case) and sampling (:class:`Sampling`), one of
them a :data:`Search`, and one result type (:class:`Hypothesis`).

Beam size 1 with nothing else asked is greedy search (:attr:`BeamSearch.greedy`); a
:class:`Sampling` draws each word instead (:mod:`luong_lit.decoding.sampling`). Every search
bounds the output length the same way (:class:`Bounds`, docs/paper_notes.md §11).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar

from torch import Tensor

Score = TypeVar("Score", float, Tensor)


NEG_INF = float("-inf")  # the score of what a search must not choose


@dataclass
class Hypothesis:
    """A translation found by a search: word ids without ``</s>``, its raw log-probability
    (None from greedy search, which does not add them up; a sample's is its log-probability
    under the model, not under the distribution it was drawn from), per-step attention, and
    the score it was ranked by (``length_penalty``)."""

    ids: list[int]
    score: float | None = None
    attention: Tensor | None = None  # (len + 1, S): a_t of every step, the </s> step included
    norm_score: float = 0.0


@dataclass(frozen=True, kw_only=True)
class Bounds:
    """How long an output may be, for every search: at most ``floor(max_len_ratio · S') +
    max_len_extra`` and at least ``floor(min_len_ratio · S')`` words, ``S' = S +
    src_len_plus``."""

    max_len_ratio: float = 1.5
    max_len_extra: int = 5
    min_len_ratio: float = 0.0
    src_len_plus: int = 0  # added to S before the length ratios (authors: 1, S counts </s>)

    def bounds(self, src_len: Tensor) -> tuple[Tensor, Tensor]:
        """Most and fewest output words per sentence (docs/paper_notes.md §11), for greedy
        and beam search alike."""
        S = (src_len + self.src_len_plus).float()  # (B,)
        max_len = (S * self.max_len_ratio).floor().long() + self.max_len_extra  # (B,)
        min_len = (S * self.min_len_ratio).floor().long()  # (B,)
        return max_len, min_len


@dataclass(frozen=True, kw_only=True)
class BeamSearch(Bounds):
    """Beam search of width ``beam``, its ``n_best`` best hypotheses kept (``beam`` 1 with
    ``n_best`` 1, raw scores and no stack is greedy search). ``length_penalty``: None (raw
    scores, the paper), ``avg`` or a GNMT α; ``stack_size``: stop after this many finished
    hypotheses (the authors' decoder: 100)."""

    beam: int = 5
    n_best: int = 1
    length_penalty: float | str | None = None
    stack_size: int | None = None

    @property
    def greedy(self) -> bool:
        """Whether this asks for nothing beyond greedy search (beam size 1 equals greedy)."""
        return (
            self.beam == 1
            and self.n_best == 1
            and self.length_penalty is None
            and self.stack_size is None
        )

    def normalise(self, score: Score, length: int) -> Score:
        """The score a hypothesis of ``length`` words (its ``</s>`` counted) is ranked by."""
        return score if self.length_penalty is None else score / self.divisor(length)

    def divisor(self, length: int) -> float:
        """What :meth:`normalise` divides a raw score by: 1 (raw scores), the length (``avg``)
        or Wu et al. (2016)'s ``((5 + length) / 6) ** α``."""
        if self.length_penalty is None:
            return 1.0
        if self.length_penalty == "avg":
            return float(max(length, 1))
        return float(((5.0 + length) / 6.0) ** float(self.length_penalty))

    def check_vocabulary(self, V: int) -> None:
        """Refuse a beam wider than the target vocabulary of ``V`` words, in one line."""
        if V < self.beam:
            raise ValueError(
                f"beam size {self.beam} is larger than the target vocabulary of {V} words"
            )


@dataclass(frozen=True, kw_only=True)
class Sampling(Bounds):
    """Draw each word from ``softmax(logits / temperature)`` instead of searching, from the
    ``top_k`` most probable words only (0: all) and from the fewest whose probabilities add up
    to ``top_p`` (1: all); ``n_best`` samples a sentence, drawn with a generator seeded by
    ``seed`` (None: a fresh seed each call)."""

    n_best: int = 1
    temperature: float = 1.0
    top_k: int = 0
    top_p: float = 1.0
    seed: int | None = None


#: what a decoder is asked to do: search (greedy or beam) or sample
Search = BeamSearch | Sampling


def beam_width(search: Search) -> int:
    """The hypotheses a sentence decodes at once: the beam, or 1 for a sampler."""
    return search.beam if isinstance(search, BeamSearch) else 1


#: Greedy search with the default length bounds.
GREEDY = BeamSearch(beam=1)

#: nmt.matlab's decoder (docs/paper_notes.md §11): beam 12, stop after 100 finished hypotheses,
#: the highest raw score; between floor(0.5 (S + 1)) and floor(1.5 (S + 1)) words.
AUTHORS = BeamSearch(
    beam=12,
    n_best=1,
    stack_size=100,
    max_len_ratio=1.5,
    max_len_extra=0,
    min_len_ratio=0.5,
    src_len_plus=1,
)


def parse_length_penalty(value: float | str | None) -> float | str | None:
    """``None``/``"none"`` (raw scores), ``"avg"``, or a GNMT α given as a number or string."""
    if value is None or value in ("none", "avg"):
        return None if value == "none" else value
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ValueError(f"length penalty must be none, avg or a number, got {value!r}") from None
