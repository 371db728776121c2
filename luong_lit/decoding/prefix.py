"""Target prefixes: words a search must emit first, then search on from where they leave it.

At step ``t`` below a sentence's prefix length the search may choose the prefix's word ``t``
only, with the log-probability the model gives it: these are forced decoding's steps
(:mod:`luong_lit.decoding.forced`), and the search goes on from the state they leave, in the
same loop, so that sentences with prefixes of different lengths (or none) share a batch. Greedy
search and sampling take the prefix's word in place of their own choice (:meth:`Prefix.choose`);
beam search keeps only the candidates that extend a hypothesis by it (:meth:`Prefix.restrict`),
so its one live hypothesis at the prefix's end is the forced pass's. The prefix counts towards
the output's length bounds; one longer than the most a sentence may have is refused
(:func:`too_long`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import torch
from torch import Tensor

from luong_lit.data.vocab import PAD_ID


class Prefix(NamedTuple):
    """The prefixes of a batch: ``ids`` (B, P) right-padded target word ids, ``length`` (B,)."""

    ids: Tensor  # (B, P)
    length: Tensor  # (B,)

    @classmethod
    def of(cls, prefixes: Sequence[Sequence[int]], device: torch.device) -> Prefix:
        """The prefixes of a batch's rows (an empty one: none)."""
        P = max((len(p) for p in prefixes), default=0)
        ids = torch.full((len(prefixes), P), PAD_ID, dtype=torch.long)  # (B, P)
        for b, p in enumerate(prefixes):
            ids[b, : len(p)] = torch.tensor(list(p), dtype=torch.long)
        length = torch.tensor([len(p) for p in prefixes], dtype=torch.long)  # (B,)
        return cls(ids.to(device), length.to(device))

    @property
    def steps(self) -> int:
        """The steps that force a word for some sentence (a host value, known beforehand)."""
        return self.ids.size(1)

    def forced(self, t: int, rows: Tensor | None = None) -> tuple[Tensor, Tensor]:
        """Whether step ``t`` forces a word (B,) and which word (B,), for ``rows`` of the batch
        (the sentence of each row; default: every sentence once)."""
        ids, length = (
            (self.ids, self.length) if rows is None else (self.ids[rows], self.length[rows])
        )
        return t < length, ids[:, t]  # (B,) x2

    def choose(self, y_t: Tensor, t: int, rows: Tensor | None = None) -> Tensor:
        """``y_t`` (B,) with the prefix's word where step ``t`` forces one."""
        if t >= self.steps:
            return y_t
        forced, word = self.forced(t, rows)  # (B,) x2
        return torch.where(forced, word, y_t)  # (B,)

    def restrict(self, logp: Tensor, t: int, rows: Tensor) -> Tensor:
        """``logp`` (B, K, V) with every word but the prefix's at ``-inf`` where step ``t``
        forces one; ``rows`` (B,) the sentence of each row."""
        if t >= self.steps:
            return logp
        forced, word = self.forced(t, rows)  # (B,) x2
        B, K, V = logp.shape
        other = torch.ones(B, 1, V, dtype=torch.bool, device=logp.device)  # (B, 1, V)
        other[torch.arange(B, device=logp.device), 0, word] = False
        return logp.masked_fill(forced.view(B, 1, 1) & other, float("-inf"))  # (B, K, V)


def too_long(prefix_len: Sequence[int], max_len: Sequence[int]) -> int | None:
    """The first sentence whose prefix is longer than the most words its output may have."""
    return next((i for i, (p, m) in enumerate(zip(prefix_len, max_len)) if p > m), None)
