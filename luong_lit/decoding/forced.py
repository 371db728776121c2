"""Forced decoding: the model reads reference translations step by step (paper §5.4).

:func:`forced_steps` is the one teacher-forced loop over the decoding interface; perplexity
of any decodable model (:func:`luong_lit.metrics.perplexity.stepwise_nll`) and forced
alignment both read it. For alignments each target word gets the source position with the
highest attention weight, under footnote 14's convention (content-based scores use the next
step's vector, location the current one; docs/paper_notes.md §12). Positions are in original
source order, even for models that read the source reversed. An ensemble's attention weights
are summed over its members; :func:`member_links` reads each member under its own convention
first.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import NamedTuple

import torch
from torch import Tensor
from torch.nn import functional as F

from luong_lit.data.loading.batching import Batch, collate
from luong_lit.decoding.unk import alignment_rows, word_alignment
from luong_lit.nn.interface import AnyDecodeModel, DecodeModel, MemoryT, StateT, StepAttention


def forced_steps(
    model: DecodeModel[MemoryT, StateT], batch: Batch
) -> Iterator[tuple[Tensor, StepAttention | None]]:
    """For ``t = 0 .. T-1``: the scores (B, V) of ``y_t`` after reading ``y_{t-1}``, and ``a_t``."""
    memory, state = model.encode(batch.src, batch.src_len)
    for t in range(batch.tgt_in.size(1)):
        scores, state, align = model.step(batch.tgt_in[:, t], state, memory, t)
        yield scores, align


class Forced(NamedTuple):
    """One sentence read by forced decoding: every step, the ``</s>`` step included."""

    attention: Tensor  # (len(tgt) + 1, len(src)) a_t of every step
    p_t: Tensor | None  # (len(tgt) + 1,) the window centre of every step (local attention)
    logprob: Tensor | None  # (len(tgt) + 1,) log p(y_t | y_<t, x) of each reference token


def _forced_batch(
    model: DecodeModel[MemoryT, StateT], batch: Batch, S: int, scores: bool
) -> tuple[Tensor, Tensor | None, Tensor | None]:
    """A batch's attention (B, T+1, S) over ``S`` source columns, its ``p_t`` (B, T+1) where
    the attention has one, and with ``scores`` each reference token's log-probability (B, T+1)."""
    att: list[Tensor] = []
    p_t: list[Tensor] = []
    logp: list[Tensor] = []
    for t, (step_scores, align) in enumerate(forced_steps(model, batch)):
        if align is None:  # no attention: all-zero rows
            att.append(torch.zeros(len(batch), S, device=batch.src.device))  # (B, S)
        else:
            att.append(align.dense(S)[:, 0])  # (B, S)
            if align.p_t is not None:  # local attention's window centre
                p_t.append(align.p_t)  # (B, 1)
        if scores:
            y = batch.tgt_out[:, t].unsqueeze(1)  # (B, 1)
            logp.append(F.log_softmax(step_scores.float(), -1).gather(1, y)[:, 0])  # (B,)
    p_all = torch.cat(p_t, 1) if p_t else None  # (B, T+1)
    return torch.stack(att, 1), p_all, torch.stack(logp, 1) if scores else None


@torch.no_grad()
def forced_pass(
    model: DecodeModel[MemoryT, StateT], src_ids: Sequence[list[int]],
    tgt_ids: Sequence[list[int]], batch_size: int = 32, scores: bool = False,
    eos_slot: bool = False,
) -> list[Forced]:  # fmt: skip
    """Per sentence, the attention of every step, ``p_t`` where the attention has one, and with
    ``scores`` the log-probability of each reference token (Eq. 6; the combined scores of an
    ensemble). ``eos_slot``: one more source column, the ``</s>`` a ``src_eos`` model reads.
    ``model``: anything with ``encode`` and ``step``."""
    out: dict[int, Forced] = {}
    device = next(model.parameters()).device
    for start in range(0, len(src_ids), batch_size):
        idx = list(range(start, min(start + batch_size, len(src_ids))))
        batch = collate([(i, src_ids[i], tgt_ids[i]) for i in idx]).to(device)
        S = batch.src.size(1) + int(eos_slot)
        att_all, p_all, lp_all = _forced_batch(model, batch, S, scores)  # (B, T+1, S), (B, T+1)
        for row, i in enumerate(batch.index.tolist()):
            n, m = len(tgt_ids[i]) + 1, len(src_ids[i]) + int(eos_slot)
            out[i] = Forced(
                att_all[row, :n, :m].cpu(),
                None if p_all is None else p_all[row, :n].float().cpu(),
                None if lp_all is None else lp_all[row, :n].cpu(),
            )
    return [out[i] for i in range(len(src_ids))]


def forced_attention(
    model: DecodeModel[MemoryT, StateT],
    src_ids: Sequence[list[int]],
    tgt_ids: Sequence[list[int]],
    batch_size: int = 32,
) -> list[Tensor]:
    """Per sentence, the (len(tgt) + 1, len(src)) attention of every step, ``</s>`` included.

    ``model``: anything with ``encode`` and ``step`` (a model, an ensemble, a decode-time form).
    """
    return [f.attention for f in forced_pass(model, src_ids, tgt_ids, batch_size)]


def attention_links(
    attention: Sequence[Tensor],
    tgt_lens: Sequence[int],
    content_based: bool,
    convention: str = "paper",
) -> list[set[tuple[int, int]]]:
    """One ``(source, target)`` link per target word from per-step attention matrices."""
    links: list[set[tuple[int, int]]] = []
    for att, n in zip(attention, tgt_lens):
        if n == 0 or att.size(1) == 0:
            links.append(set())
            continue
        links.append(
            {(s, j) for j, s in enumerate(word_alignment(att, n, content_based, convention))}
        )
    return links


def member_links(
    members: Sequence[AnyDecodeModel], src_ids: Sequence[list[int]],
    tgt_ids: Sequence[list[int]], conventions: Sequence[str], batch_size: int = 32,
) -> list[set[tuple[int, int]]]:  # fmt: skip
    """Links of an ensemble whose members are each read under their own convention.

    For target word ``j`` every member contributes the attention row it aligns to ``j``
    (:func:`~luong_lit.decoding.unk.alignment_rows` with the member's score kind and
    convention); the link goes to the argmax of the summed rows. With one convention for all
    members this is the ensemble's own summed alignment; with ``predicted`` for a member that
    learned to attend to the word it predicts (local-p, docs/paper_notes.md §12) its rows are
    shifted by one step before the sum. Members may mix location and content-based scores.
    """
    atts = [forced_attention(m, src_ids, tgt_ids, batch_size) for m in members]
    links: list[set[tuple[int, int]]] = []
    for i, tgt in enumerate(tgt_ids):
        n = len(tgt)
        if n == 0 or len(src_ids[i]) == 0:
            links.append(set())
            continue
        rows = [
            alignment_rows(att[i], n, m.content_based, conv)  # (n, S)
            for att, m, conv in zip(atts, members, conventions)
        ]
        best = torch.stack(rows).sum(0).argmax(-1).tolist()  # (n,)
        links.append({(s, j) for j, s in enumerate(best)})
    return links
