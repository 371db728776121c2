"""Ensembles of independently trained models behind the single-model decoding interface.

Each member keeps its own encoder, attention and recurrent state, so global and local models,
different scores and input feeding can be mixed (paper §4.2: "8 different models of various
settings"). They must share vocabularies. At every step the members' predictions are combined
(docs/paper_notes.md §10):

* ``logits`` (default, the authors' rule): ``(1/M) Σ_m W_s^(m) h_tilde_t^(m)``, then softmax,
  i.e. a renormalised geometric mean of the members' distributions;
* ``log_probs``: the mean of the members' log-probabilities (OpenNMT-py's default);
* ``probs``: the log of the mean of their probabilities.

The alignment of the ensemble is the sum of the members' attention weights (docs/paper_notes.md §9).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import torch
from torch import Tensor, nn
from torch.nn import functional as F

from luong_lit.errors import UserError
from luong_lit.nn.interface import AnyDecodeModel, Reorderable, StepAttention

COMBINE = ("logits", "log_probs", "probs")


class EnsembleError(UserError):
    """Members that cannot be combined (different vocabularies, unknown rule)."""


class _Many(tuple[Reorderable, ...]):
    """A tuple of per-member states or memories that reorders all of them at once."""

    def index_select(self, idx: Tensor) -> _Many:
        return _Many(x.index_select(idx) for x in self)


class SummedAlignment(NamedTuple):
    """The members' attention weights, summed over members (docs/paper_notes.md §9)."""

    parts: tuple[StepAttention | None, ...]  # per member: its a_t, or None (no attention)

    def dense(self, S: int) -> Tensor:
        dense = [a.dense(S) for a in self.parts if a is not None]  # M x (B, T, S)
        return torch.stack(dense).sum(0)

    @property
    def p_t(self) -> None:
        """None: summed weights have no one aligned position."""
        return None


class Ensemble(nn.Module):
    """``encode``/``step`` over ``M`` models, combining their next-word scores per step: a
    :class:`~luong_lit.nn.interface.DecodeModel` whose ``members`` are the models."""

    def __init__(self, models: Sequence[AnyDecodeModel], combine: str = "logits") -> None:
        super().__init__()
        if combine not in COMBINE:
            raise EnsembleError(
                f"ensemble combine={combine!r} is unknown; choose one of {', '.join(COMBINE)}"
            )
        if not models:
            raise EnsembleError("an ensemble needs at least one model")
        sizes = {m.tgt_vocab_size for m in models}
        if len(sizes) > 1:
            raise EnsembleError(
                f"ensemble members have different target vocabulary sizes {sorted(sizes)}"
            )
        modules = [m for m in models if isinstance(m, nn.Module)]
        if len(modules) < len(models):
            raise EnsembleError("ensemble members must be torch modules (nn.Module)")
        self.members: tuple[AnyDecodeModel, ...] = tuple(models)
        self.nets = nn.ModuleList(modules)  # registered: eval(), to() and parameters() reach them
        self.combine = combine

    @property
    def content_based(self) -> bool:
        """Footnote 14's convention, which must be the same for every member."""
        kinds = {m.content_based for m in self.members}
        if len(kinds) > 1:
            raise EnsembleError(
                "the ensemble mixes location and content-based scores, whose "
                "alignment conventions differ (paper footnote 14); use members of one kind "
                "(align alone can read mixed members: --member-conventions)"
            )
        return kinds.pop()

    @property
    def has_attention(self) -> bool:
        return any(m.has_attention for m in self.members)

    @property
    def tgt_vocab_size(self) -> int:
        return self.members[0].tgt_vocab_size

    @property
    def src_eos(self) -> bool:
        """False: the summed attention is read over the source words only."""
        return False

    @property
    def window(self) -> None:
        return None

    @property
    def attention_kind(self) -> None:
        return None

    def encode(self, src: Tensor, src_len: Tensor) -> tuple[_Many, _Many]:
        encoded = [m.encode(src, src_len) for m in self.members]
        return _Many(e[0] for e in encoded), _Many(e[1] for e in encoded)

    def step(
        self, y_prev: Tensor, state: _Many, memory: _Many, t: int
    ) -> tuple[Tensor, _Many, SummedAlignment | None]:
        """One step of every member; returns combined scores (B, V) for a log-softmax."""
        outs = [m.step(y_prev, s, mem, t) for m, s, mem in zip(self.members, state, memory)]
        logits = torch.stack([o[0].float() for o in outs])  # (M, B, V)
        if self.combine == "logits":
            combined = logits.mean(0)  # (B, V)
        elif self.combine == "log_probs":
            combined = F.log_softmax(logits, -1).mean(0)  # (B, V)
        else:
            combined = torch.logsumexp(F.log_softmax(logits, -1), 0) - math.log(len(outs))  # (B, V)
        aligns = tuple(o[2] for o in outs)
        align = SummedAlignment(aligns) if any(a is not None for a in aligns) else None
        return combined, _Many(o[1] for o in outs), align
