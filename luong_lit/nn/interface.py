"""What decoding reads of a model: the decode-time contract.

A :class:`DecodeModel` is anything searched, scored or aligned: a
:class:`~luong_lit.nn.Seq2Seq`, an engine's decode-time form of one
(:class:`~luong_lit.nn.fast.stepper.FastStepper`), or an ensemble of them
(:class:`~luong_lit.decoding.ensemble.Ensemble`). The searches
(:mod:`luong_lit.decoding`), the engines, evaluation, alignment, the translator and the server
use these members and nothing else of it. A single model is an ensemble of one: its
``members`` are itself, so that no caller asks which of the two it holds.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, Protocol, runtime_checkable

from torch import Tensor, nn


@runtime_checkable
class DecodeModel(Protocol):
    """``encode`` and ``step`` (paper §3: ``h_bar_s`` once, then ``p(y_t | y_<t, x)`` step by
    step) and what the attention of those steps is."""

    def encode(self, src: Tensor, src_len: Tensor) -> tuple[Any, Any]:
        """The attention memory (``h_bar_s`` and what the score precomputes) and the decoder's
        first state, for a right-padded batch ``src`` (B, S) of lengths ``src_len`` (B,). Both
        reorder their rows with ``index_select``."""

    def step(self, y_prev: Tensor, state: Any, memory: Any, t: int) -> tuple[Tensor, Any, Any]:
        """One step from ``y_{t-1}`` (B,) at 0-based step ``t``: the next-word scores (B, V)
        (pre-softmax, Eq. 6), the new state, and ``a_t`` (an object with ``dense(S)`` giving
        (B, 1, S) weights) or None without attention."""

    def parameters(self) -> Iterator[nn.Parameter]:
        """Its weights (decoding reads their device)."""

    @property
    def members(self) -> Sequence[DecodeModel]:
        """The single models it combines: itself for one model."""

    @property
    def has_attention(self) -> bool:
        """Whether its steps give ``a_t`` (False for the paper's non-attentional base)."""

    @property
    def content_based(self) -> bool:
        """Whether its scores read content (dot, general, concat): footnote 14's convention."""

    @property
    def tgt_vocab_size(self) -> int:
        """The size ``V`` of its next-word scores."""

    @property
    def src_eos(self) -> bool:
        """Whether its attention may rest on a ``</s>`` read after the source words (an
        ensemble's summed attention is read over the words only)."""

    @property
    def window(self) -> int | None:
        """Local attention's half-width ``D`` (§3.2); None for global attention, none, or an
        ensemble."""

    @property
    def attention_kind(self) -> str | None:
        """Its attention's class name (``GlobalAttention``, ...), None without attention."""
