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

from luong_lit.nn.interface import (
    AnyDecodeModel,
    EnsembleError,
    HasFacts,
    ModelFacts,
    Reorderable,
    StepAttention,
)

__all__ = ["COMBINE", "Ensemble", "EnsembleError", "SummedAlignment", "combined_facts"]

COMBINE = ("logits", "log_probs", "probs")


def combined_facts(members: Sequence[AnyDecodeModel]) -> ModelFacts:
    """An ensemble's facts from its members': it attends where any member does; footnote 14's
    convention is theirs where they share one (else None, refused when read); its summed
    attention has no one window or kind and is read over the source words only."""
    facts = [m.facts for m in members]
    sizes = {f.tgt_vocab_size for f in facts}
    if len(sizes) > 1:
        raise EnsembleError(
            f"ensemble members have different target vocabulary sizes {sorted(sizes)}"
        )
    kinds = {f.content_based for f in facts}
    return ModelFacts(
        has_attention=any(f.has_attention for f in facts),
        content_based=kinds.pop() if len(kinds) == 1 else None,
        tgt_vocab_size=sizes.pop(),
        src_eos=False,
        window=None,
        attention_kind=None,
    )


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


class Ensemble(nn.Module, HasFacts):
    """``encode``/``step`` over ``M`` models, combining their next-word scores per step: a
    :class:`~luong_lit.nn.interface.DecodeModel` whose ``members`` are the models, and whose
    facts are :func:`combined_facts`."""

    def __init__(self, models: Sequence[AnyDecodeModel], combine: str = "logits") -> None:
        super().__init__()
        if combine not in COMBINE:
            raise EnsembleError(
                f"ensemble combine={combine!r} is unknown; choose one of {', '.join(COMBINE)}"
            )
        if not models:
            raise EnsembleError("an ensemble needs at least one model")
        facts = combined_facts(models)
        modules = [m for m in models if isinstance(m, nn.Module)]
        if len(modules) < len(models):
            raise EnsembleError("ensemble members must be torch modules (nn.Module)")
        self.members: tuple[AnyDecodeModel, ...] = tuple(models)
        self.nets = nn.ModuleList(modules)  # registered: eval(), to() and parameters() reach them
        self.combine, self.facts = combine, facts

    def encode(self, src: Tensor, src_len: Tensor) -> tuple[_Many, _Many]:
        encoded = [m.encode(src, src_len) for m in self.members]
        return _Many(e[0] for e in encoded), _Many(e[1] for e in encoded)

    def step(
        self, y_prev: Tensor, state: _Many, memory: _Many, t: int | Tensor
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
