"""Lightning writes every checkpoint atomically (:func:`luong_lit.checkpoint.atomic_save`)."""

from __future__ import annotations

from typing import Any

from lightning.pytorch.plugins.io import TorchCheckpointIO

from luong_lit.checkpoint import atomic_save


class AtomicCheckpointIO(TorchCheckpointIO):
    """Write to a temporary file in the same directory, then rename over the target.

    A crash mid-write leaves the previous checkpoint intact: finished work is never lost.
    """

    def save_checkpoint(self, checkpoint: dict[str, Any], path, storage_options=None) -> None:
        atomic_save(checkpoint, path)
