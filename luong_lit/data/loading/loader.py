"""The training batches of an epoch, resumable in the middle of it.

:class:`ResumableLoader` follows the trainer's position: each epoch's batches are shuffled anew,
and a run resumed from a checkpoint written during an epoch continues with the first batch the
stopped run had not trained. Its ``state_dict`` (kept in every checkpoint) records the epoch and
the batches trained.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from torch.utils.data import DataLoader


class ResumableLoader(DataLoader):
    """A :class:`DataLoader` whose batch order follows the trainer's epoch, and which starts a
    resumed epoch at the first batch the stopped run had not trained.

    ``epoch`` gives the trainer's current epoch, ``trained`` how many batches of it training
    has finished (both None outside a trainer, and both restored from a checkpoint when a run
    resumes), and ``limit`` the trainer's ``limit_train_batches`` (an epoch may train fewer
    batches than the sampler holds). Each epoch's batches are shuffled anew: the trainer itself
    tells only a *sampler* of the epoch, never a batch sampler. The loader counts as resumable
    for the trainer (``state_dict``/``load_state_dict``); its position is the trainer's own count.
    """

    def __init__(
        self,
        *args,
        epoch: Callable[[], int | None],
        trained: Callable[[], int | None],
        limit: Callable[[], int | float | None] = lambda: None,
        **kwargs,
    ) -> None:
        super().__init__(*args, **kwargs)
        self._epoch, self._trained, self._limit = epoch, trained, limit

    def epoch_length(self) -> int:
        """Batches an epoch trains: the sampler's, cut by ``limit_train_batches`` as the trainer
        cuts it (an integer: at most that many; a fraction: that share)."""
        n, limit = len(self.batch_sampler), self._limit()
        if isinstance(limit, int) and not isinstance(limit, bool):
            return min(n, limit)
        return int(n * limit) if isinstance(limit, float) else n

    def state_dict(self) -> dict[str, int]:
        return {"epoch": int(self.batch_sampler.epoch), "batches": int(self._trained() or 0)}

    def load_state_dict(self, state: dict[str, int]) -> None:
        """Nothing to restore: the position is read from the restored trainer at ``iter()``."""

    def __iter__(self) -> Iterator:
        """This epoch's batches; in a resumed epoch, those the stopped run had not trained."""
        sampler, epoch, skip = self.batch_sampler, self._epoch(), self._trained() or 0
        if epoch is not None:
            sampler.set_epoch(epoch)
            if skip >= self.epoch_length():  # stopped as an epoch ended: the next one starts
                sampler.set_epoch(epoch + 1)
                skip = 0
        sampler.skip = skip
        return super().__iter__()
