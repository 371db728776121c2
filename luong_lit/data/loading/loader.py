"""The training batches of an epoch, resumable in the middle of it.

:class:`ResumableLoader` shuffles each epoch's batches anew and keeps its own position: the
epoch it serves and how many of its batches went into training steps. Lightning saves that
position in every checkpoint (its stateful-loader hooks, ``state_dict`` / ``load_state_dict``;
the datamodule keeps the same position in its own ``state_dict``, which Lightning restores
also where a checkpoint was written as an epoch ended), so a resumed run continues with the
first batch the stopped run had not trained. The datamodule counts the batches as they enter
training steps (its ``on_before_batch_transfer`` hook), after Lightning's prefetching, so the
count is of batches trained, not of batches read.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from torch.utils.data import DataLoader


class ResumableLoader(DataLoader):
    """A :class:`DataLoader` whose batch order follows the trainer's epoch, and which starts a
    resumed epoch at the first batch the stopped run had not trained.

    ``epoch`` gives the trainer's current epoch (None outside a trainer: the sampler keeps its
    own), and ``limit`` the trainer's ``limit_train_batches`` (an epoch may train fewer batches
    than the sampler holds). Each epoch's batches are shuffled anew: the trainer itself tells
    only a *sampler* of the epoch, never a batch sampler.
    """

    def __init__(
        self,
        *args,
        epoch: Callable[[], int | None],
        limit: Callable[[], int | float | None] = lambda: None,
        accumulate: Callable[[], int] = lambda: 1,
        **kwargs,
    ) -> None:
        super().__init__(*args, **kwargs)
        self._epoch, self._limit, self._accumulate = epoch, limit, accumulate
        self.position = {"epoch": 0, "batches": 0}  # the epoch served, its batches trained
        self._resume: dict[str, int] | None = None  # a checkpoint's position, until iter()

    def epoch_length(self) -> int:
        """Batches an epoch trains: the sampler's, cut by ``limit_train_batches`` as the trainer
        cuts it (an integer: at most that many; a fraction: that share)."""
        n, limit = len(self.batch_sampler), self._limit()
        if isinstance(limit, int) and not isinstance(limit, bool):
            return min(n, limit)
        return int(n * limit) if isinstance(limit, float) else n

    def trained_one(self) -> None:
        """One more batch of this epoch entered a training step."""
        self.position["batches"] += 1

    def state_dict(self) -> dict[str, int]:
        return dict(self.position)

    def load_state_dict(self, state: dict[str, int]) -> None:
        """A checkpoint's position, taken up by the next ``iter()`` if it is of that epoch."""
        self._resume = {"epoch": int(state["epoch"]), "batches": int(state["batches"])}

    def __iter__(self) -> Iterator:
        """This epoch's batches; in a resumed epoch, those the stopped run had not trained."""
        sampler, epoch, skip = self.batch_sampler, self._epoch(), 0
        resume, self._resume = self._resume, None
        if epoch is not None:
            if resume is not None and resume["epoch"] == epoch:
                skip = resume["batches"]
            if skip >= self.epoch_length():  # stopped as an epoch ended: the next one starts
                epoch, skip = epoch + 1, 0
            sampler.set_epoch(epoch)
        self.position = {"epoch": int(sampler.epoch), "batches": skip}
        sampler.skip = 0
        every = sampler.batches_of_this_rank()[: self.epoch_length()]  # trained before included
        sampler.skip = skip
        k = self._accumulate()
        if k == 1:
            return super().__iter__()
        return _grouped(super().__iter__(), group_totals(every, k, sampler.tgt_lens), skip)


def group_totals(batches, k: int, tgt_lens) -> list[tuple[int, int]]:
    """For each batch, the sentences and target tokens (``</s>`` included) of the ``k``
    consecutive batches whose gradients one optimizer step accumulates (the epoch's last group
    may hold fewer)."""
    out = []
    for start in range(0, len(batches), k):
        group = batches[start : start + k]
        totals = (sum(len(b) for b in group), sum(int(tgt_lens[b].sum()) + len(b) for b in group))
        out += [totals] * len(group)
    return out


def _grouped(batches: Iterator, totals: list[tuple[int, int]], skip: int) -> Iterator:
    for j, batch in enumerate(batches, start=skip):
        batch.group = totals[j]
        yield batch
