"""The GPUs of one machine as a pool of slots that the jobs of sweeps take and give back.

Each GPU has ``per_device`` slots, each slot a lock file (``gpu<d>.<k>.lock`` in the pool
directory) held with ``flock`` for as long as a job runs. The operating system drops the lock
when the process that holds it exits, however it exits, so a crashed job frees its GPU. Slots
are tried slot index first (slot 0 of every GPU, then slot 1 of every GPU, ...), so jobs spread
over the GPUs before any GPU is shared. With one slot per GPU, no two jobs ever share a device,
whatever their lengths; ``job.num % n_gpus`` would double-book a GPU when jobs differ in length.

Plain Python (``fcntl``): no launcher offers a GPU pool, and a lock file works the same under
joblib's workers, submitit's local processes and separate shells.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from luong_lit.errors import ConfigError


@dataclass
class Slot:
    """One slot of one GPU, held until :meth:`release` (or the process's exit)."""

    device: int
    index: int
    handle: IO[str] | None

    def release(self) -> None:
        if self.handle is not None:
            self.handle.close()  # closing the file drops the lock
            self.handle = None

    def __enter__(self) -> Slot:
        return self

    def __exit__(self, *exc) -> None:
        self.release()


class DevicePool:
    """``n_devices`` GPUs with ``per_device`` slots each, locked through files in ``lock_dir``."""

    def __init__(self, lock_dir: str | Path, n_devices: int, per_device: int = 1) -> None:
        if n_devices < 1 or per_device < 1:
            raise ConfigError(
                f"a device pool needs at least one device and one job per device "
                f"(got {n_devices} devices, sweep.jobs_per_gpu={per_device})"
            )
        self.lock_dir, self.n_devices, self.per_device = Path(lock_dir), n_devices, per_device
        self.lock_dir.mkdir(parents=True, exist_ok=True)

    def _try(self, device: int, index: int, owner: str) -> Slot | None:
        handle = open(self.lock_dir / f"gpu{device}.{index}.lock", "a+", encoding="utf-8")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            return None
        handle.seek(0)
        handle.truncate()
        handle.write(json.dumps({"pid": os.getpid(), "job": owner, "since": time.time()}))
        handle.flush()
        return Slot(device, index, handle)

    def try_acquire(self, owner: str = "") -> Slot | None:
        """A free slot, or None when every slot is held."""
        for index in range(self.per_device):
            for device in range(self.n_devices):
                slot = self._try(device, index, owner)
                if slot is not None:
                    return slot
        return None

    def acquire(self, owner: str = "", poll_s: float = 0.5, timeout_s: float | None = None) -> Slot:
        """Wait for a free slot (forever, or ``timeout_s`` seconds: then :class:`TimeoutError`)."""
        start = time.monotonic()
        while True:
            slot = self.try_acquire(owner)
            if slot is not None:
                return slot
            if timeout_s is not None and time.monotonic() - start > timeout_s:
                raise TimeoutError(f"no free GPU slot in {self.lock_dir} after {timeout_s:.0f} s")
            time.sleep(poll_s)
