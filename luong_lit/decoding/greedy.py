"""Greedy decoding over a model's ``encode``/``step`` (:mod:`luong_lit.nn.interface`)."""

from __future__ import annotations

import torch
from torch import Tensor

from luong_lit.data.vocab import BOS_ID, EOS_ID
from luong_lit.decoding.beam import sync_every
from luong_lit.decoding.prefix import Prefix
from luong_lit.decoding.search import GREEDY, Bounds
from luong_lit.nn.interface import DecodeModel, MemoryT, StateT


@torch.no_grad()
def greedy_decode(
    model: DecodeModel[MemoryT, StateT], src: Tensor, src_len: Tensor, search: Bounds = GREEDY,
    return_attention: bool = False, every: int | None = None, prefix: Prefix | None = None,
) -> tuple[list[list[int]], list[Tensor] | None]:  # fmt: skip
    """Pick the most probable word at every step until ``</s>`` or the length limit (after the
    words of ``prefix``, where a sentence has one: :mod:`luong_lit.decoding.prefix`).

    The output length is bounded as in beam search (:meth:`Bounds.bounds
    <luong_lit.decoding.search.Bounds.bounds>`, docs/paper_notes.md §11); ``search``'s other
    options do not apply. ``model``: a :class:`~luong_lit.nn.interface.DecodeModel`. Whether
    every sentence has ended is read on the host every ``every`` steps only (default
    :func:`~luong_lit.decoding.beam.sync_every`); the steps after a sentence's end give ``</s>``.

    Returns:
        hyps: a list of B id lists, without ``</s>``.
        attn: with ``return_attention``, a list of (len_i + 1, S) weight tensors (the
            ``</s>`` step included); otherwise None.
    """
    every = every or sync_every(src.device)
    memory, state = model.encode(src, src_len)
    B = src.size(0)
    limits, min_len = search.bounds(src_len)  # (B,) x2
    min_steps = int(min_len.max())  # steps that may still forbid </s> for some row
    y = torch.full((B,), BOS_ID, dtype=torch.long, device=src.device)
    done = torch.zeros(B, dtype=torch.bool, device=src.device)
    out: list[Tensor] = []
    attns: list[Tensor] = []
    for t in range(int(limits.max())):
        logits, state, align = model.step(y, state, memory, t)
        if t < min_steps:
            logits[:, EOS_ID] = logits[:, EOS_ID].masked_fill(t < min_len, float("-inf"))
        y = logits.argmax(-1)  # (B,)
        y = y if prefix is None else prefix.choose(y, t)  # (B,)
        y = torch.where(done | (t >= limits), torch.full_like(y, EOS_ID), y)
        out.append(y)
        if return_attention and align is not None:
            attns.append(align.dense(src.size(1)).squeeze(1))  # (B, S)
        done |= y == EOS_ID
        if (t + 1) % every == 0 and bool(done.all()):  # the one host read
            break
    if not out:  # a length limit of 0 words: nothing to decode
        return [[] for _ in range(B)], (
            [src.new_zeros((1, int(n)), dtype=torch.float) for n in src_len]
            if return_attention
            else None
        )
    ids = torch.stack(out, 1).tolist()  # (B, T)
    hyps = [row[: row.index(EOS_ID)] if EOS_ID in row else row for row in ids]
    if not return_attention or not attns:
        return hyps, None
    a = torch.stack(attns, 1)  # (B, T, S)
    return hyps, [a[b, : len(h) + 1, : int(src_len[b])] for b, h in enumerate(hyps)]
