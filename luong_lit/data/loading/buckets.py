"""Buckets: the fixed shapes ``(B, S, T)`` a training batch is padded up to where the steps run
in fixed shapes (``engine.graphs`` static or captured), which bucket a batch takes, every bucket
a set of examples can fill, and the padding itself, done where the loader makes the batches."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from luong_lit.data.loading.batching import Batch, collate
from luong_lit.data.vocab import PAD_ID


def bucket_shape(
    batch: Batch, rows: int, lengths: Sequence[int], square: bool = True
) -> tuple[int, int, int] | None:
    """The bucket ``(B, S, T)`` a batch is padded up to for a fixed-shape training step:
    ``rows`` rows, and the smallest of ``lengths`` that holds the longest source and the
    longest target (``square``: one length for both; else each its own, which runs fewer
    decoder steps and needs more shapes); None when the batch fits none (it then runs with
    its own shape). A batch already padded to its bucket keeps it."""
    if len(batch) > rows:
        return None
    return fitting_bucket(batch.src.size(1), batch.tgt_in.size(1), rows, lengths, square)


def fitting_bucket(
    src: int, tgt: int, rows: int, lengths: Sequence[int], square: bool = True
) -> tuple[int, int, int] | None:
    """The bucket of a batch whose longest source has ``src`` and longest target ``tgt``
    positions (``<s>`` or ``</s>`` included), as :func:`bucket_shape` finds it."""
    if square:
        src = tgt = max(src, tgt)
    S, T = smallest_holding(src, lengths), smallest_holding(tgt, lengths)
    return None if S is None or T is None else (rows, S, T)


def smallest_holding(n: int, lengths: Sequence[int]) -> int | None:
    """The smallest of ``lengths`` that holds ``n`` positions; None if none does."""
    return min((m for m in lengths if m >= n), default=None)


def bucket_shapes(
    src_lens: Sequence[int], tgt_lens: Sequence[int], rows: int, lengths: Sequence[int],
    square: bool = True,
) -> list[tuple[int, int, int]]:  # fmt: skip
    """Every bucket a batch of these examples (their word counts) can be padded up to: with
    ``square``, the buckets of the examples themselves (a batch's is its longest example's);
    else each source length's bucket with each target length's (a batch's longest source and
    longest target may be two examples'), a batch too long for every bucket left out."""
    if square:
        pairs = {(int(s), int(t) + 1) for s, t in zip(src_lens, tgt_lens, strict=True)}
        shapes = {fitting_bucket(s, t, rows, lengths) for s, t in pairs}  # t: <s> or </s>
        return sorted(shape for shape in shapes if shape is not None)
    S = {smallest_holding(int(n), lengths) for n in src_lens}
    T = {smallest_holding(int(n) + 1, lengths) for n in tgt_lens}
    return sorted((rows, s, t) for s in S if s is not None for t in T if t is not None)


def pad_batch(batch: Batch, B: int, S: int, T: int) -> Batch:
    """``batch`` padded to ``B`` rows, ``S`` source and ``T`` target positions.

    Added rows hold a one-token source of padding (length 1, so attention has a position
    to rest on) and an all-padding target, which the loss ignores; their ``index`` is -1.
    Its length stays its sentences' (``sentences``); a batch of that shape comes back as it is.
    """
    n = batch.src.size(0)  # its rows (a padded batch has more than its sentences)
    if batch.src.shape == (B, S) and batch.tgt_in.shape == (B, T):
        return batch

    def grow(x: Tensor, cols: int, fill: int) -> Tensor:
        out = x.new_full((B, cols), fill)
        out[:n, : x.size(1)] = x
        return out

    src_len = torch.cat([batch.src_len, batch.src_len.new_ones(B - n)])  # (B,)
    index = torch.cat([batch.index, batch.index.new_full((B - n,), -1)])  # (B,)
    return Batch(
        grow(batch.src, S, PAD_ID),
        src_len,
        grow(batch.tgt_in, T, PAD_ID),
        grow(batch.tgt_out, T, PAD_ID),
        index,
        batch.tgt_tokens,  # padding adds none
        batch.group,
        len(batch),
    )


@dataclass(frozen=True)
class BucketPadding:
    """A loader's batches padded to their buckets where they are made (in a loader worker
    where there are workers; the loader pins them after, on a GPU), not on the device by the
    training step: the fixed-shape engine's buckets (``rows``, ``lengths``, ``square``;
    :func:`bucket_shape`)."""

    rows: int
    lengths: tuple[int, ...]
    square: bool = True

    def __call__(self, batch: Batch) -> Batch:
        shape = bucket_shape(batch, self.rows, self.lengths, self.square)
        return batch if shape is None else pad_batch(batch, *shape)

    def shapes(
        self, src_lens: Sequence[int], tgt_lens: Sequence[int]
    ) -> list[tuple[int, int, int]]:
        """Every bucket a batch of these examples can take (:func:`bucket_shapes`)."""
        return bucket_shapes(src_lens, tgt_lens, self.rows, self.lengths, self.square)


def padded_collate(examples, pad: BucketPadding) -> Batch:
    """:func:`collate`, then ``pad`` (a loader's ``collate_fn`` with ``functools.partial``)."""
    return pad(collate(examples))
