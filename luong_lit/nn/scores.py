"""Alignment score functions ``score(h_t, h_bar_s)`` (paper Eq. 8 and Eq. 9, EMNLP numbering).

Every score is split in two so that per-batch work is done once, not once per decoder step:

* ``prepare(h_bar_s)`` turns the source states into *keys* once per batch;
* ``forward(h_t, keys)`` scores queries against keys.

``keys`` is either ``(B, S, k)``, shared by all queries (global attention), or
``(B, T, W, k)``, one window of ``W`` gathered keys per query (local attention).
``h_t`` is ``(B, T, d)``. The result is ``(B, T, S)`` or ``(B, T, W)`` raw scores.

A new score subclasses :class:`Score` and is named by :func:`register_score`, as the four of
the paper are below; :func:`dot` scores both shapes of keys.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor, nn

from luong_lit.nn.names import SCORES, registrar
from luong_lit.validate import integer


def dot(h_t: Tensor, keys: Tensor) -> Tensor:
    """Batched ``h_tᵀ key`` for shared ``(B,S,k)`` or windowed ``(B,T,W,k)`` keys."""
    if keys.dim() == 3:
        return torch.bmm(h_t, keys.transpose(1, 2))  # (B, T, S)
    return torch.matmul(keys, h_t.unsqueeze(-1)).squeeze(-1)  # (B, T, W)


class Score(nn.Module):
    """How to score: the base of every score.

    Its constructor is given ``dim`` (the hidden size ``d``) and ``bias`` (``model.net.bias``)
    where it names them, then the options of its config. ``content_based`` selects the
    footnote-14 alignment convention. ``fixed_slots``: it scores a fixed row of source slots
    from ``h_t`` alone (location, Eq. 9), not the keys it is given: global attention fits its
    weights to the sentence, and local attention refuses it.
    """

    content_based: bool = True
    fixed_slots: bool = False

    def __init__(self) -> None:  # names nothing: a score without options is given nothing
        super().__init__()

    def prepare(self, h_bar_s: Tensor) -> Tensor:
        """Per-batch keys from source states ``h_bar_s`` of shape (B, S, d)."""
        return h_bar_s

    def forward(self, h_t: Tensor, keys: Tensor) -> Tensor:  # pragma: no cover - abstract
        raise NotImplementedError


def register_score(name: str) -> Callable[[type], type]:
    """Class decorator: a :class:`Score` that configs (``score=NAME``) and checkpoints name
    ``name``."""
    return registrar(SCORES, Score, name)


@register_score("dot")
class DotScore(Score):
    """``score(h_t, h_bar_s) = h_tᵀ h_bar_s`` (Eq. 8, *dot*)."""

    def __init__(self, dim: int, bias: bool = False) -> None:
        super().__init__()

    def forward(self, h_t: Tensor, keys: Tensor) -> Tensor:
        return dot(h_t, keys)


@register_score("general")
class GeneralScore(Score):
    """``score(h_t, h_bar_s) = h_tᵀ W_a h_bar_s`` (Eq. 8, *general*).

    The keys are ``W_a h_bar_s``, computed once per batch.
    """

    def __init__(self, dim: int, bias: bool = False) -> None:
        super().__init__()
        self.W_a = nn.Linear(dim, dim, bias=bias)

    def prepare(self, h_bar_s: Tensor) -> Tensor:
        keys: Tensor = self.W_a(h_bar_s)  # (B, S, d)
        return keys

    def forward(self, h_t: Tensor, keys: Tensor) -> Tensor:
        return dot(h_t, keys)


@register_score("concat")
class ConcatScore(Score):
    """``score(h_t, h_bar_s) = v_aᵀ tanh(W_a [h_t; h_bar_s])`` (Eq. 8, *concat*).

    ``paper_form=True`` is the formula of the paper: ``W_a = [W_1, W_2]`` is learned in full.
    ``paper_form=False`` is the authors' implementation (docs/paper_notes.md §4, arXiv footnote
    15): the block of ``W_a`` acting on ``h_bar_s`` is fixed to the identity, i.e.
    ``v_aᵀ tanh(h_bar_s + W_1 h_t)``.
    """

    def __init__(self, dim: int, paper_form: bool = True, bias: bool = False) -> None:
        super().__init__()
        self.paper_form = paper_form
        self.W_1 = nn.Linear(dim, dim, bias=bias)  # acts on h_t
        self.W_2 = nn.Linear(dim, dim, bias=False) if paper_form else None  # acts on h_bar_s
        self.v_a = nn.Linear(dim, 1, bias=False)

    def prepare(self, h_bar_s: Tensor) -> Tensor:
        return self.W_2(h_bar_s) if self.W_2 is not None else h_bar_s  # (B, S, d)

    def forward(self, h_t: Tensor, keys: Tensor) -> Tensor:
        q = self.W_1(h_t)  # (B, T, d)
        if keys.dim() == 3:
            hidden = torch.tanh(q.unsqueeze(2) + keys.unsqueeze(1))  # (B, T, S, d)
        else:
            hidden = torch.tanh(q.unsqueeze(2) + keys)  # (B, T, W, d)
        scores: Tensor = self.v_a(hidden)  # (B, T, S|W, 1)
        return scores.squeeze(-1)  # (B, T, S|W)


@register_score("location")
class LocationScore(Score):
    """``a_t = softmax(W_a h_t)`` (Eq. 9): scores from the target state alone.

    ``W_a`` has one row per source position up to ``max_src_len`` (the authors used 50,
    docs/paper_notes.md §3). Positions beyond it get no weight ("for long sentences, we ignore
    words near the end", paper footnote 6). Not content based: its alignment for target word ``y_t``
    is ``a_t`` itself (footnote 14).
    """

    content_based = False
    fixed_slots = True

    def __init__(self, dim: int, max_src_len: int = 50, bias: bool = False) -> None:
        super().__init__()
        integer("max_src_len", max_src_len, 1)
        self.max_src_len = max_src_len
        self.W_a = nn.Linear(dim, max_src_len, bias=bias)

    def forward(self, h_t: Tensor, keys: Tensor) -> Tensor:
        scores: Tensor = self.W_a(h_t)  # (B, T, max_src_len)
        return scores
