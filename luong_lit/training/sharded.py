"""Decoding a dev or test set across the ranks of a data-parallel run: each rank decodes its
share of the batches one process would decode (:func:`shard_of`), and every rank gathers the
whole (:func:`split_words`), so that BLEU is computed on the same translations as in one
process, in a W-th of the time.

The share is made of whole batches of :func:`~luong_lit.decoding.corpus.decode_corpus`'s own
batching (length-sorted, longest first), so that each sentence is decoded in the very batch it
would be decoded in by one process: the translations are the same, not merely close.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from luong_lit.data.loading.splits import Split


def shard_of(src_ids: Sequence[Sequence[int]], batch_size: int, rank: int, world: int) -> list:
    """The indices of the sentences in batches ``rank``, ``rank + world``, ... of the
    length-sorted batches of ``src_ids`` (as :func:`~luong_lit.decoding.corpus.decode_corpus`
    sorts them), in index order. The batches are of ``batch_size`` sentences, or fewer where the
    set would leave ranks without one (3,000 sentences on 32 ranks: 94 a batch, not 128): every
    rank decodes a share."""
    order = sorted((i for i, s in enumerate(src_ids) if len(s)), key=lambda i: -len(src_ids[i]))
    size = max(1, min(batch_size, -(-len(order) // world)))  # ceil(n / world), at most the batch
    batches = [order[k : k + size] for k in range(0, len(order), size)]
    return sorted(i for batch in batches[rank::world] for i in batch)


def subset(split: Split, idx: Sequence[int]) -> Split:
    """The sentences ``idx`` of ``split``, as a split of their own."""

    def pick(xs: list) -> list:
        return [xs[i] for i in idx] if xs else []

    return Split(split.name, pick(split.src_tokens), pick(split.tgt_tokens),
                 pick(split.src_ids), pick(split.tgt_ids), pick(split.tgt_text))  # fmt: skip


def split_words(trainer, inference, split: Split, *, batch_size: int,
                max_sentences: int | None = None, **search: Any):  # fmt: skip
    """``(words, replaced)`` of :meth:`luong_lit.inference.Inference.split` on the first
    ``max_sentences`` sentences of ``split``; under DDP each rank decodes its share and all
    of them gather the whole (``replaced``: None without unk replacement)."""
    world = trainer.world_size
    if world == 1:
        out = inference.split(split, batch_size=batch_size, max_sentences=max_sentences, **search)
        return out.words, out.replaced
    import torch.distributed as dist

    from luong_lit.training.signals import SkipDecoding, agree_or_stop

    n = len(split.src_ids[:max_sentences])
    idx = shard_of(split.src_ids[:n], batch_size, trainer.global_rank, world)
    try:
        out = inference.split(subset(split, idx), batch_size=batch_size, **search)
        share = (idx, out.words, out.replaced)
    except SkipDecoding:  # a signal: this share is left, the ranks stop after the gather
        share = ([], [], None if not search.get("replace_unk") else [])
    shares: list = [None] * world
    dist.all_gather_object(shares, share)
    agree_or_stop(trainer)  # every rank has gathered: a signal any of them holds stops all
    words: list[list[str]] = [[] for _ in range(n)]
    replaced = None if share[2] is None else [[] for _ in range(n)]
    for got, said, swapped in shares:
        for k, i in enumerate(got):
            words[i] = said[k]
            if replaced is not None:
                replaced[i] = swapped[k]
    return words, replaced
