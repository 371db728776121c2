"""Checkpoint files: atomic writes, and reading them safely (``weights_only``), with the
model description they keep (:mod:`luong_lit.checkpoint.meta`)."""

from __future__ import annotations

import os
import pickle
import re
import tempfile
from pathlib import Path
from typing import Any

import torch

from luong_lit.checkpoint.meta import CheckpointMeta
from luong_lit.errors import CheckpointError


def _failed_write(err: RuntimeError) -> bool:
    """Whether torch's zip writer failed because the file could not be written."""
    text = str(err)
    return "unexpected pos" in text or "failed writing" in text or "file write failed" in text


def _umask() -> int:
    """The process's umask (read from ``/proc`` where it can be, which changes nothing)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def atomic_save(obj: Any, path: str | os.PathLike[str]) -> Path:
    """``torch.save`` to a temporary file in the same directory, then rename it over ``path``.

    A crash mid-write leaves the previous file intact: finished work is never lost. A full
    disk or an unwritable directory raises :class:`CheckpointError` saying so, and the
    previous file is still there. The file gets the permissions of any other new file (those
    the umask leaves), not the temporary file's owner-only ones.
    """
    path = Path(path)
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
        with os.fdopen(fd, "wb") as fh:
            os.chmod(tmp, 0o666 & ~_umask())  # mkstemp's file is the owner's only
            torch.save(obj, fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except (OSError, RuntimeError) as err:
        if not isinstance(err, OSError) and not _failed_write(err):
            raise
        reason = err.strerror if isinstance(err, OSError) and err.strerror else "the write failed"
        kept = "the previous checkpoint is kept" if path.is_file() else "nothing was written"
        raise CheckpointError(
            f"{path}: cannot write the checkpoint ({reason}); {kept}. The disk may be full, or "
            "the directory not writable: free some space or choose another one (hydra.run.dir=...)"
        ) from None
    finally:
        if tmp is not None and Path(tmp).exists():
            Path(tmp).unlink(missing_ok=True)
    return path


def _unpickling_error(path: Path, message: str) -> CheckpointError:
    """What a ``weights_only`` load met, without torch's advice to load the file unsafely."""
    found = re.search(r"Unsupported global: GLOBAL (\S+)", message)
    if found:
        return CheckpointError(
            f"{path}: refused: it holds an object of {found.group(1)}, which loading could run"
            " as code"
        )
    reason = re.search(r"WeightsUnpickler error: *\n*\s*([^\n]+)", message)
    detail = f": {reason.group(1).strip()}" if reason else ""
    return CheckpointError(
        f"{path}: not a readable checkpoint (damaged, or not a checkpoint{detail})"
    )


def _folder(path: Path) -> CheckpointError:
    """A folder given as a checkpoint (a run's, say), with the checkpoints in it or in its
    ``checkpoints/``."""
    found = sorted(path.glob("*.ckpt")) or sorted((path / "checkpoints").glob("*.ckpt"))
    listed = f"its checkpoints: {', '.join(map(str, found))}" if found else "it holds no .ckpt file"
    return CheckpointError(f"{path} is a folder, not a checkpoint file; {listed}")


def _missing(path: Path) -> CheckpointError:
    """A checkpoint that is not there, with the checkpoints its folder does hold (a run has a
    ``last.ckpt`` before its first validation writes ``best.ckpt``)."""
    found = sorted(p.name for p in path.parent.glob("*.ckpt"))
    if not found:
        return CheckpointError(f"{path}: checkpoint does not exist")
    why = ""
    if path.name == "best.ckpt" and "last.ckpt" in found:
        why = (
            f" (a run writes best.ckpt once it has validated; until then use "
            f"{path.parent / 'last.ckpt'})"
        )
    return CheckpointError(
        f"{path}: checkpoint does not exist; its folder holds {', '.join(found)}{why}"
    )


def read_checkpoint(
    path: str | os.PathLike[str], map_location: str = "cpu", mmap: bool = False
) -> dict[str, Any]:
    """A luong_lit checkpoint as a dict, read with ``torch.load(weights_only=True)``
    (``mmap``: its tensors mapped from the file, not read, for a look at its description).

    Raises :class:`CheckpointError` for a missing, unreadable or foreign file, or one whose
    description does not read (:meth:`CheckpointMeta.from_dict`).
    """
    path = Path(path)
    if path.is_dir():
        raise _folder(path)
    if not path.is_file():
        raise _missing(path)
    try:
        ckpt: dict[str, Any] = torch.load(
            path, map_location=map_location, weights_only=True, mmap=mmap
        )
    except pickle.UnpicklingError as err:  # what loading only tensors and plain data refused
        raise _unpickling_error(path, str(err)) from None
    except Exception as err:  # torch raises many types for corrupt files
        raise CheckpointError(f"{path}: not a readable checkpoint ({type(err).__name__})") from None
    CheckpointMeta.of(ckpt, path)  # a luong_lit checkpoint whose description reads, or refused
    return ckpt


def read_meta(path: str | os.PathLike[str]) -> CheckpointMeta:
    """The description a checkpoint keeps (:class:`CheckpointMeta`), its tensors left unread."""
    return CheckpointMeta.of(read_checkpoint(path, mmap=True), path)
