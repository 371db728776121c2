"""What decoding reads of a model: the decode-time contract.

A :class:`DecodeModel` is anything searched, scored or aligned: a
:class:`~luong_lit.nn.Seq2Seq`, an engine's decode-time form of one
(:class:`~luong_lit.nn.fast.stepper.FastStepper`), or an ensemble of them
(:class:`~luong_lit.decoding.ensemble.Ensemble`). The searches
(:mod:`luong_lit.decoding`), the engines, evaluation, alignment, the translator and the server
use these members and nothing else of it. A single model is an ensemble of one: its
``members`` are itself, so that no caller asks which of the two it holds. What a model is
(whether it attends, footnote 14's convention, its vocabulary size, ...) is one frozen record,
:class:`ModelFacts`, made once when the model is built and handed on by each form of it.

What crosses the boundary has its own small contract: the attention memory and the decoder
state are :class:`Reorderable` (beam search and ensembles reorder their rows), and a step's
attention is a :class:`StepAttention` (its dense weights and, for local attention, ``p_t``).
:class:`DecodeModel` is generic in the types of its memory and state, so that a search
written against it hands a model back exactly what that model gave.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

from torch import Tensor, nn

from luong_lit.errors import UserError

if TYPE_CHECKING:
    from typing_extensions import Self


class Reorderable(Protocol):
    """Batch rows that can be reordered, repeated or dropped: the attention memory and the
    decoder state (:class:`~luong_lit.nn.attention.Memory`,
    :class:`~luong_lit.nn.decoder.DecoderState`, an ensemble's per-member tuple)."""

    def index_select(self, idx: Tensor) -> Self:
        """The rows ``idx`` (N,) of the batch, in that order."""


class StepAttention(Protocol):
    """A step's attention ``a_t`` (:class:`~luong_lit.nn.attention.Alignment`, or an
    ensemble's summed weights)."""

    def dense(self, S: int) -> Tensor:
        """The weights over the first ``S`` source positions, (B, T, S)."""

    @property
    def p_t(self) -> Tensor | None:
        """The aligned source position (B, T) of local attention (§3.2); None where there is
        none (global attention, an ensemble's sum)."""


class Switchable(Protocol):
    """A module's training and evaluation modes (:class:`torch.nn.Module`'s): decoding runs a
    model in eval mode and puts it back as it was (:func:`luong_lit.nn.modes.evaluating`)."""

    training: bool

    def train(self, mode: bool = True) -> object:
        """Training mode on (dropout) or off."""

    def eval(self) -> object:
        """Evaluation mode (dropout off)."""


class EnsembleError(UserError):
    """Members that cannot be combined (different vocabularies, an unknown rule, both of
    footnote 14's conventions read as one)."""


@dataclass(frozen=True)
class ModelFacts:
    """What a decode-time model is, fixed when it is built: one record, which
    :class:`~luong_lit.nn.Seq2Seq` makes once, an ensemble makes from its members' and every
    other form of a model hands on (:class:`HasFacts` reads the Protocol's properties from it)."""

    has_attention: bool  # its steps give a_t (False: the paper's non-attentional base)
    content_based: bool | None  # footnote 14's convention; None: an ensemble's members mix both
    tgt_vocab_size: int  # the size V of its next-word scores
    src_eos: bool  # its attention may rest on a </s> read after the source words
    window: int | None  # local attention's half-width D (§3.2)
    attention_kind: str | None  # its attention's class name, None without attention


class HasFacts:
    """The facts of :class:`DecodeModel` read from its one :class:`ModelFacts`, ``self.facts``
    (see the Protocol for what each means)."""

    facts: ModelFacts

    @property
    def has_attention(self) -> bool:
        return self.facts.has_attention

    @property
    def content_based(self) -> bool:
        """Footnote 14's convention, refused for members that mix both."""
        content_based = self.facts.content_based
        if content_based is None:
            raise EnsembleError(
                "the ensemble mixes location and content-based scores, whose "
                "alignment conventions differ (paper footnote 14); use members of one kind "
                "(align alone can read mixed members: --member-conventions)"
            )
        return content_based

    @property
    def tgt_vocab_size(self) -> int:
        return self.facts.tgt_vocab_size

    @property
    def src_eos(self) -> bool:
        return self.facts.src_eos

    @property
    def window(self) -> int | None:
        return self.facts.window

    @property
    def attention_kind(self) -> str | None:
        return self.facts.attention_kind


class OneModel(HasFacts):
    """A single model's facts, and its ``members``: itself, an ensemble of one."""

    @property
    def members(self) -> tuple[Self]:
        return (self,)


MemoryT = TypeVar("MemoryT", bound=Reorderable)
StateT = TypeVar("StateT", bound=Reorderable)


@runtime_checkable
class DecodeModel(Switchable, Protocol[MemoryT, StateT]):
    """``encode`` and ``step`` (paper §3: ``h_bar_s`` once, then ``p(y_t | y_<t, x)`` step by
    step) and what the attention of those steps is. ``MemoryT`` and ``StateT``: the types of
    its attention memory and decoder state, which only the model itself reads."""

    def encode(self, src: Tensor, src_len: Tensor) -> tuple[MemoryT, StateT]:
        """The attention memory (``h_bar_s`` and what the score precomputes) and the decoder's
        first state, for a right-padded batch ``src`` (B, S) of lengths ``src_len`` (B,)."""

    def step(
        self, y_prev: Tensor, state: StateT, memory: MemoryT, t: int | Tensor
    ) -> tuple[Tensor, StateT, StepAttention | None]:
        """One step from ``y_{t-1}`` (B,) at 0-based step ``t``: the next-word scores (B, V)
        (pre-softmax, Eq. 6), the new state, and ``a_t``, or None without attention."""

    def parameters(self) -> Iterator[nn.Parameter]:
        """Its weights (decoding reads their device)."""

    @property
    def facts(self) -> ModelFacts:
        """What it is, fixed when it was built: the record the properties below read."""

    @property
    def members(self) -> Sequence[AnyDecodeModel]:
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


#: A decode-time model whose memory and state types its holder does not need to know (a model
#: held by an ensemble, an engine or the translator).
AnyDecodeModel = DecodeModel[Any, Any]
