"""Batches sorted by target length within large chunks, then shuffled (docs/paper_notes.md §8)."""

from __future__ import annotations

import math
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from luong_lit.data.vocab import BOS_ID, EOS_ID, PAD_ID


@dataclass
class Batch:
    """A padded batch. Targets are ``tgt_in = <s> y_1..y_n`` and ``tgt_out = y_1..y_n </s>``.

    ``tgt_tokens``: its non-pad target tokens, counted on the host by :func:`collate` (and kept
    by :meth:`to`), so that reading the count never waits for a device; None where a batch
    was made otherwise (:attr:`num_tgt_tokens` then counts them).
    """

    src: Tensor  # (B, S) source ids, right-padded with 0
    src_len: Tensor  # (B,)
    tgt_in: Tensor  # (B, T)
    tgt_out: Tensor  # (B, T)
    index: Tensor  # (B,) position of each example in its split
    tgt_tokens: int | None = None
    # (sentences, target tokens) of the optimizer step's batches, where gradients are
    # accumulated over several (:class:`~luong_lit.data.loading.loader.ResumableLoader`)
    group: tuple[int, int] | None = None
    # its own sentences where it was padded with empty rows (:mod:`luong_lit.data.loading.buckets`)
    sentences: int | None = None

    def tensors(self) -> tuple[Tensor, ...]:
        return self.src, self.src_len, self.tgt_in, self.tgt_out, self.index

    def to(self, device) -> Batch:
        """On ``device``; from pinned memory (a GPU run's loader) without waiting for the copy."""
        moved = (t.to(device, non_blocking=t.is_pinned()) for t in self.tensors())
        return Batch(*moved, self.tgt_tokens, self.group, self.sentences)

    def pin_memory(self) -> Batch:
        """In pinned host memory (``DataLoader(pin_memory=True)`` calls it)."""
        pinned = (t.pin_memory() for t in self.tensors())
        return Batch(*pinned, self.tgt_tokens, self.group, self.sentences)

    @property
    def num_tgt_tokens(self) -> int:
        """Non-pad target tokens, ``</s>`` included: what the loss is summed over."""
        if self.tgt_tokens is not None:
            return self.tgt_tokens
        return int((self.tgt_out != PAD_ID).sum())

    def __len__(self) -> int:
        """Its sentences: the rows, but for the empty ones padding added (``sentences``)."""
        return self.src.size(0) if self.sentences is None else self.sentences


def _pad(seqs: Sequence[Sequence[int]], prefix: list[int], suffix: list[int]) -> Tensor:
    T = max(len(s) for s in seqs) + len(prefix) + len(suffix)
    out = torch.full((len(seqs), T), PAD_ID, dtype=torch.long)
    for i, s in enumerate(seqs):
        row = prefix + list(s) + suffix
        out[i, : len(row)] = torch.as_tensor(row, dtype=torch.long)
    return out


def collate(examples: Sequence[tuple[int, Sequence[int], Sequence[int]]]) -> Batch:
    """``(index, src_ids, tgt_ids)`` triples to a :class:`Batch`.

    Rows are ordered by target length, longest first (stable), so the input-feeding decoder
    can drop ended sentences without reordering; ``index`` keeps each row's position.
    """
    examples = sorted(examples, key=lambda e: -len(e[2]))
    idx, src, tgt = zip(*examples)
    return Batch(
        src=_pad(src, [], []),
        src_len=torch.tensor([len(s) for s in src], dtype=torch.long),
        tgt_in=_pad(tgt, [BOS_ID], []),
        tgt_out=_pad(tgt, [], [EOS_ID]),
        index=torch.tensor(idx, dtype=torch.long),
        tgt_tokens=sum(len(t) + 1 for t in tgt),  # each target and its </s>
    )


#: token batches (``batch_by='tokens'``) sort within chunks of at least this many batches
TOKEN_CHUNK_BATCHES = 100


def dealt_in_groups(batches: list[np.ndarray], world_size: int, rng: random.Random) -> list:
    """``batches`` (length-sorted within each chunk) in groups of ``world_size`` consecutive
    ones, the groups shuffled and flattened: batch ``i * world_size + r`` of the result is rank
    ``r``'s in step ``i``, and the ranks of a step hold batches of similar length. A last group
    short of ``world_size`` batches is dropped, as the ranks' equal counts would drop it."""
    n = len(batches) // world_size
    groups = [batches[i * world_size : (i + 1) * world_size] for i in range(n)]
    rng.shuffle(groups)
    return [b for group in groups for b in group]


class BucketBatchSampler:
    """Yields batches: arrays of example indices.

    Each epoch: shuffle the examples, read them in chunks of ``chunk_batches`` batches,
    sort each chunk by target length (then source length), cut it into batches and shuffle
    the batch order (nmt.matlab ``loadTrainBatches``; docs/paper_notes.md §8). The order
    depends only on ``seed`` and the epoch, so a resumed run sees the same batches. With
    ``batch_by='tokens'`` a batch holds as many sentences as fit ``batch_size`` padded target
    tokens, sorted within chunks of at least :data:`TOKEN_CHUNK_BATCHES` batches (sentences of
    similar length together, as fairseq's ``--max-tokens`` batches).

    Under DDP (``set_rank``) the ranks of one step get batches of similar length, so that none
    waits long for the slowest: each chunk's length-sorted batches are dealt in groups of
    ``world_size`` consecutive ones, the groups (not the batches) are shuffled, and rank ``r``
    takes the ``r``-th batch of every group. Evaluation batches (no shuffling) are dealt in turn
    and none is dropped (the ranks' sums add up to one process's).
    """

    def __init__(
        self,
        src_lens: Sequence[int],
        tgt_lens: Sequence[int],
        batch_size: int,
        *,
        batch_by: str = "sentences",
        chunk_batches: int = 100,
        shuffle: bool = True,
        seed: int = 0,
    ) -> None:
        if batch_by not in ("sentences", "tokens"):
            raise ValueError(f"batch_by must be 'sentences' or 'tokens', got {batch_by!r}")
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.src_lens = np.asarray(src_lens, dtype=np.int64)  # (N,)
        self.tgt_lens = np.asarray(tgt_lens, dtype=np.int64)  # (N,)
        self.batch_size, self.batch_by = batch_size, batch_by
        self.chunk_batches, self.shuffle, self.seed = chunk_batches, shuffle, seed
        self.epoch, self.rank, self.world_size = 0, 0, 1
        self.skip = 0  # batches of this epoch to leave out: those trained before a resume
        self._memo: tuple[int, list[np.ndarray]] | None = None

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def set_rank(self, rank: int, world_size: int) -> None:
        self.rank, self.world_size = rank, world_size

    def _sorted(self, idx: np.ndarray) -> np.ndarray:
        """``idx`` by target length, then source length; ties keep their order (a stable sort)."""
        return idx[np.lexsort((self.src_lens[idx], self.tgt_lens[idx]))]

    def _cut(self, order: np.ndarray) -> list[np.ndarray]:
        """Consecutive batches of ``order``: ``batch_size`` sentences, or as many as fit
        ``batch_size`` padded target tokens (``</s>`` included)."""
        if self.batch_by == "sentences":
            return [order[i : i + self.batch_size] for i in range(0, len(order), self.batch_size)]
        cuts, count, longest = [], 0, 0
        for k, n in enumerate((self.tgt_lens[order] + 1).tolist()):
            longest_new = max(longest, n)
            if count and longest_new * (count + 1) > self.batch_size:
                cuts.append(k)
                count, longest_new = 0, n
            count += 1
            longest = longest_new
        return np.split(order, cuts)

    def batches(self) -> list[np.ndarray]:
        """This epoch's batches of example indices, every rank's (computed once per epoch)."""
        key = (self.epoch, self.world_size)
        if self._memo is None or self._memo[0] != key:
            self._memo = (key, self._batches())
        return self._memo[1]

    def _batches(self) -> list[np.ndarray]:
        if not self.shuffle:  # evaluation: one global sort keeps padding minimal
            order = self._sorted(np.arange(len(self.tgt_lens)))
            out = self._cut(order)
            if 1 < self.world_size and len(out) < self.world_size <= len(order):
                out = np.array_split(order, self.world_size)  # a batch for every rank
            return out
        rng = random.Random(self.seed + self.epoch)
        order = list(range(len(self.tgt_lens)))
        rng.shuffle(order)
        shuffled = np.asarray(order, dtype=np.int64)
        if self.batch_by == "sentences":
            chunk = self.chunk_batches * self.batch_size
        else:  # token batches hold sentences of similar length: sorted within 100 batches or more
            chunk = max(self.chunk_batches, TOKEN_CHUNK_BATCHES) * max(1, self.batch_size // 20)
        out: list[np.ndarray] = []
        for start in range(0, len(shuffled), chunk):
            out.extend(self._cut(self._sorted(shuffled[start : start + chunk])))
        if self.world_size == 1:
            rng.shuffle(out)
            return out
        return dealt_in_groups(out, self.world_size, rng)

    def batches_of_this_rank(self) -> list[np.ndarray]:
        """The batches this rank trains in this epoch, in order (from :attr:`skip` on)."""
        return list(iter(self))

    def __iter__(self) -> Iterator[np.ndarray]:
        batches = self.batches()
        if self.world_size > 1 and self.shuffle:  # equal counts on every rank, as DDP needs
            n = len(batches) // self.world_size * self.world_size
            batches = batches[self.rank : n : self.world_size]
        elif self.world_size > 1:  # evaluation: every batch, in turn
            batches = batches[self.rank :: self.world_size]
        return iter(batches[self.skip :])

    def __len__(self) -> int:
        n = (
            len(self.batches())
            if self.batch_by == "tokens"
            else math.ceil(len(self.tgt_lens) / self.batch_size)
        )
        if self.world_size == 1:
            return n
        if not self.shuffle:  # evaluation: this rank's share of every batch
            return len(range(self.rank, len(self.batches()), self.world_size))
        return n // self.world_size
