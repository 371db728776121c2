"""Where to look: global, local-m and local-p attention (paper §3.1–3.2, EMNLP numbering).

An attention module is composed with a :mod:`luong_lit.nn.scores` score ("how to score").
It is stateless: per-batch work is returned by :meth:`prepare` as a :class:`Memory` and
passed back in explicitly, so beam search and ensembles can reorder it freely.

``forward(h_t, memory, step)`` takes ``T`` queries at once: ``T = 1`` when decoding step by
step (input feeding), ``T = full length`` otherwise. ``step`` is the 0-based decoder step of
the first query, which local-m needs.

A new attention subclasses :class:`Attention` (or :class:`LocalAttention`, giving its
``p_t``) and is named by :func:`register_attention`, as the paper's three are below.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import torch
from torch import Tensor, nn

from luong_lit.nn.names import ATTENTIONS, registrar
from luong_lit.nn.scores import Score
from luong_lit.nn.window import gather_positions, gaussian, window
from luong_lit.validate import integer

#: a decoder step's index: a host int, or a () long tensor on the device (a search that runs
#: chunks of its steps as CUDA graphs counts them there)
StepIndex = int | Tensor


class Memory(NamedTuple):
    """What attention needs from the encoder, computed once per batch."""

    h_bar_s: Tensor  # (B, S, d) source states in original order
    keys: Tensor  # (B, S, k) score keys, ``score.prepare(h_bar_s)``
    src_len: Tensor  # (B,) true source lengths
    valid: Tensor  # (B, S) True at real (non-pad) positions
    bias: Tensor  # (B, S) 0 at real positions, -inf at padding: added to the scores

    @classmethod
    def of(cls, h_bar_s: Tensor, keys: Tensor, src_len: Tensor) -> Memory:
        """The memory of ``h_bar_s`` (B, S, d) with its score ``keys``: the padding's mask, as
        flags and as the additive mask of the scores, made once a batch."""
        S = h_bar_s.size(1)
        valid = torch.arange(S, device=h_bar_s.device).unsqueeze(0) < src_len.unsqueeze(1)  # (B, S)
        bias = torch.zeros(valid.shape, dtype=h_bar_s.dtype, device=h_bar_s.device)  # (B, S)
        return cls(h_bar_s, keys, src_len, valid, bias.masked_fill_(~valid, float("-inf")))

    def index_select(self, idx: Tensor) -> Memory:
        """Reorder or repeat batch rows (beam search, ensembles)."""
        return Memory(*(x.index_select(0, idx) for x in self))


class Alignment(NamedTuple):
    """Attention weights ``a_t`` of ``T`` steps over ``N`` source slots."""

    a_t: Tensor  # (B, T, N) weights
    index: Tensor | None  # type: ignore[assignment]  # (B, T, N) source slot positions; None when N == S
    p_t: Tensor | None  # (B, T) aligned source position (local attention)

    def dense(self, S: int) -> Tensor:
        """Weights scattered over the first ``S`` source positions, shape (B, T, S).

        Slots at ``S`` or beyond are left out: with a ``src_eos`` model and ``S`` the padded
        number of words, that is the longest sentence's ``</s>``; a shorter sentence's
        ``</s>`` sits at its own length, where callers cut each row anyway.
        """
        if self.index is None:
            return self.a_t[..., :S]
        out = self.a_t.new_zeros(*self.a_t.shape[:2], S + 1)  # (B, T, S+1)
        out.scatter_add_(2, self.index.clamp(max=S), self.a_t)
        return out[..., :S]


def masked_softmax(scores: Tensor, valid: Tensor) -> Tensor:
    """Softmax over the last axis with exactly zero weight where ``valid`` is False."""
    return torch.softmax(scores.masked_fill(~valid, float("-inf")), dim=-1)


class Attention(nn.Module):
    """Where to look: the base of every attention. It holds the score and builds the
    :class:`Memory`; a subclass computes ``forward(h_t, memory, step) -> (c_t, Alignment)``.

    Its constructor is given the ``score``, and ``dim`` (the hidden size ``d``) and ``bias``
    (``model.net.bias``) where it names them, then the options of its config. Both engines
    compute it by its own ``forward``; to be captured in a CUDA graph
    (``engine.graphs=capture``) that must read no value on the host.
    """

    def __init__(self, score: Score) -> None:
        super().__init__()
        self.score = score

    @property
    def half_width(self) -> int | None:
        """The half-width ``D`` of a local attention's window (§3.2); None: the whole source."""
        return None

    def forward(self, h_t: Tensor, memory: Memory, step: StepIndex = 0) -> tuple[Tensor, Alignment]:
        """The context ``c_t`` (B, T, d) of queries ``h_t`` (B, T, d), and their weights ``a_t``
        (Eq. 7 and 5: ``h_tilde_t = tanh(W_c [c_t; h_t])`` is the decoder's)."""
        raise NotImplementedError  # pragma: no cover - a subclass computes it

    def prepare(self, h_bar_s: Tensor, src_len: Tensor) -> Memory:
        return Memory.of(h_bar_s, self.score.prepare(h_bar_s), src_len)


def register_attention(name: str) -> Callable[[type], type]:
    """Class decorator: an :class:`Attention` that configs (``attention=NAME``) and checkpoints
    name ``name``."""
    return registrar(ATTENTIONS, Attention, name)


@register_attention("global")
class GlobalAttention(Attention):
    """Attend to all source states (paper §3.1): ``a_t = align(h_t, h_bar_s)`` (Eq. 7).

    ``mask_padding=True`` gives padding exactly zero weight. ``False`` mimics the
    paper-era code, which did not mask (docs/paper_notes.md §0).
    """

    def __init__(self, score: Score, mask_padding: bool = True) -> None:
        super().__init__(score)
        self.mask_padding = mask_padding

    def forward(self, h_t: Tensor, memory: Memory, step: StepIndex = 0) -> tuple[Tensor, Alignment]:
        scores = self.score(h_t, memory.keys)  # (B, T, S) or (B, T, L) for location
        if self.score.fixed_slots:
            a_t = self._slot_weights(scores, memory)
        elif self.mask_padding:
            bias = memory.bias.unsqueeze(1).to(scores.dtype)  # (B, 1, S) -inf at padding
            a_t = torch.softmax(scores + bias, dim=-1)  # (B, T, S) exactly 0 at padding
        else:
            a_t = torch.softmax(scores, dim=-1)
        c_t = torch.bmm(a_t, memory.h_bar_s)  # (B, T, d)
        return c_t, Alignment(a_t, None, None)

    def _slot_weights(self, scores: Tensor, memory: Memory) -> Tensor:
        """Eq. 9 over ``L`` fixed slots, cut or zero-padded to the batch length ``S``."""
        L, S = scores.size(-1), memory.h_bar_s.size(1)
        if self.mask_padding:
            slot_ok = torch.arange(L, device=scores.device) < memory.src_len.view(
                -1, 1, 1
            )  # (B, 1, L)
            a_t = masked_softmax(scores, slot_ok)  # (B, T, L)
        else:
            a_t = torch.softmax(scores, dim=-1)
        if S <= L:
            return a_t[..., :S]  # (B, T, S)
        return nn.functional.pad(a_t, (0, S - L))  # (B, T, S): words past L get no weight


class LocalAttention(Attention):
    """Attend to the ``2D+1`` window ``[p_t - D, p_t + D]`` only (paper §3.2).

    A subclass gives the aligned position ``p_t`` (:meth:`position`) and may reweigh the
    window's weights around it (:meth:`weigh`). An integer ``p_t`` is the window's centre; a
    real one is centred at ``floor(p_t)``, with no gradient through the centre.

    Scores are computed for the gathered window positions only; the whole source is never
    scored. ``clip_to='sentence'`` drops slots outside the true sentence (nmt.matlab HEAD);
    ``'batch'`` drops only those outside the padded batch (paper-era code, docs/paper_notes.md §1).
    """

    def __init__(self, score: Score, D: int = 10, clip_to: str = "sentence") -> None:
        super().__init__(score)
        if score.fixed_slots:
            raise ValueError(
                f"{type(self).__name__} cannot use {type(score).__name__}: it scores fixed "
                "source slots, not window positions (the paper uses the location score with "
                "global attention only)."
            )
        integer("D", D, 1)  # the window half-width
        if clip_to not in ("sentence", "batch"):
            raise ValueError(f"clip_to must be 'sentence' or 'batch', got {clip_to!r}")
        self.D, self.clip_to = D, clip_to

    @property
    def half_width(self) -> int:
        return self.D

    def position(self, h_t: Tensor, memory: Memory, step: StepIndex) -> Tensor:  # pragma: no cover
        """The aligned source position ``p_t`` of each query, (B, T): integer or real."""
        raise NotImplementedError

    def weigh(self, a_t: Tensor, idx: Tensor, p_t: Tensor, h_t: Tensor) -> Tensor:
        """The final weights from the window's softmax ``a_t`` (B, T, W) at positions ``idx``
        (B, T, W): as they are (local-m); local-p multiplies by a Gaussian (Eq. 11)."""
        return a_t

    def forward(self, h_t: Tensor, memory: Memory, step: StepIndex = 0) -> tuple[Tensor, Alignment]:
        p_t = self.position(h_t, memory, step)  # (B, T)
        real = p_t.is_floating_point()
        centre = p_t.detach().floor().long() if real else p_t  # (B, T)
        a_t, idx, _ = self._attend(h_t, memory, centre)  # (B, T, W)
        a_t = self.weigh(a_t, idx, p_t, h_t)  # (B, T, W)
        p_t = p_t if real else p_t.to(h_t.dtype)  # (B, T)
        return self._context(a_t, memory, idx), Alignment(a_t, idx, p_t)

    def _attend(self, h_t: Tensor, memory: Memory, center: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """Masked softmax over the window around ``center`` (B, T)."""
        bound = None
        if self.clip_to == "batch":
            bound = torch.full_like(memory.src_len, memory.h_bar_s.size(1))
        S = memory.h_bar_s.size(1)
        idx, valid = window(center, self.D, memory.src_len, bound=bound, S=S)  # (B, T, W) x2
        keys = gather_positions(memory.keys, idx)  # (B, T, W, k)
        a_t = masked_softmax(self.score(h_t, keys), valid)  # (B, T, W)
        return a_t, idx, valid

    @staticmethod
    def _context(a_t: Tensor, memory: Memory, idx: Tensor) -> Tensor:
        h_win = gather_positions(memory.h_bar_s, idx)  # (B, T, W, d)
        return torch.matmul(a_t.unsqueeze(-2), h_win).squeeze(-2)  # (B, T, d)


@register_attention("local_m")
class LocalMonotonicAttention(LocalAttention):
    """local-m: ``p_t = t`` (paper §3.2), clamped to the last source word when ``t > S``.

    With 0-based steps, step ``t`` centres on source position ``min(t, S-1)`` (docs/paper_notes.md
    §2). No Gaussian; the softmax runs over the in-window slots only.
    """

    def position(self, h_t: Tensor, memory: Memory, step: StepIndex) -> Tensor:
        B, T, _ = h_t.shape
        t = (torch.arange(T, device=h_t.device) + step).expand(B, T)  # (B, T); step: a tensor too
        return torch.minimum(t, (memory.src_len - 1).unsqueeze(1))  # (B, T)


@register_attention("local_p")
class LocalPredictiveAttention(LocalAttention):
    """local-p: ``p_t = S · sigmoid(v_pᵀ tanh(W_p h_t))`` (Eq. 10) with a Gaussian (Eq. 11).

    ``S`` is the true source length, so ``p_t ∈ [0, S]``. The window centre is
    ``floor(p_t)``; the Gaussian uses the real-valued ``p_t`` with ``σ = D/2`` (:meth:`sigma`).
    By default the Gaussian multiplies the normalised weights and the product is *not*
    renormalised, so ``Σ_s a_t(s) ≤ 1`` (nmt.matlab ``normLocalAttn = 0``, docs/paper_notes.md §1).
    Gradients reach ``W_p`` and ``v_p`` only through the Gaussian (footnote 10).
    """

    def __init__(
        self,
        score: Score,
        dim: int,
        D: int = 10,
        renormalize: bool = False,
        clip_to: str = "sentence",
        bias: bool = False,
    ) -> None:
        super().__init__(score, D, clip_to)
        self.renormalize = renormalize
        self.W_p = nn.Linear(dim, dim, bias=bias)
        self.v_p = nn.Linear(dim, 1, bias=False)

    def position(self, h_t: Tensor, memory: Memory, step: StepIndex) -> Tensor:
        S = memory.src_len.to(h_t.dtype).unsqueeze(1)  # (B, 1)
        return S * torch.sigmoid(self.v_p(torch.tanh(self.W_p(h_t))).squeeze(-1))  # (B, T) Eq. 10

    def sigma(self, h_t: Tensor) -> float | Tensor:
        """The Gaussian's ``σ`` (Eq. 11): ``D/2``. A tensor may take its place: one ``σ``, or
        one per query (B, T)."""
        return self.D / 2.0

    def weigh(self, a_t: Tensor, idx: Tensor, p_t: Tensor, h_t: Tensor) -> Tensor:
        a_t = a_t * gaussian(idx, p_t, self.sigma(h_t))  # (B, T, W) Eq. 11
        if self.renormalize:
            a_t = a_t / a_t.sum(-1, keepdim=True).clamp_min(1e-12)  # (B, T, W)
        return a_t
