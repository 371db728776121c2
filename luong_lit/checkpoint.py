"""Checkpoint files: atomic writes, and safe loading of trained models (``weights_only``)."""

from __future__ import annotations

import os
import pickle
import re
import tempfile
from pathlib import Path
from typing import Any

import torch

from luong_lit.data.vocab import Vocab
from luong_lit.errors import CheckpointError, ConfigError
from luong_lit.nn import Seq2Seq
from luong_lit.nn.names import ATTENTIONS, SCORES, part_spec

__all__ = [
    "CheckpointError",
    "atomic_save",
    "build_net",
    "load_model",
    "load_models",
    "run_directory",
]


def _failed_write(err: RuntimeError) -> bool:
    """Whether torch's zip writer failed because the file could not be written."""
    text = str(err)
    return "unexpected pos" in text or "failed writing" in text or "file write failed" in text


def atomic_save(obj: Any, path: str | os.PathLike) -> Path:
    """``torch.save`` to a temporary file in the same directory, then rename it over ``path``.

    A crash mid-write leaves the previous file intact: finished work is never lost. A full
    disk or an unwritable directory raises :class:`CheckpointError` saying so, and the
    previous file is still there.
    """
    path = Path(path)
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
        with os.fdopen(fd, "wb") as fh:
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
    except BaseException:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
        raise
    finally:
        if tmp is not None and Path(tmp).exists():
            Path(tmp).unlink(missing_ok=True)
    return path


_SCALARS = (bool, int, float, str, type(None))
_PARTS = {"attention": ATTENTIONS, "score": SCORES}


#: Keys of a model description that are not :class:`Seq2Seq` arguments (``impl``: how earlier
#: versions computed the model).
NOT_NET_ARGS = frozenset({"_target_", "_partial_", "impl"})


def _net_kwargs(net_cfg: dict[str, Any]) -> dict[str, Any]:
    """The arguments of :class:`Seq2Seq` in a checkpoint's model description, checked.

    A checkpoint is untrusted: its values may only be scalars, and its attention and score
    only names of :mod:`luong_lit.nn.names` with scalar options, never a callable to import.
    """
    kwargs = {}
    for key, value in net_cfg.items():
        if key in NOT_NET_ARGS:
            continue
        if key in _PARTS:
            try:
                spec = part_spec(value, _PARTS[key], key)
            except ConfigError as err:
                raise CheckpointError(f"checkpoint config net.{err}") from None
            value = None if spec is None else {"name": spec[0], **spec[1]}
        elif not isinstance(value, _SCALARS):
            raise CheckpointError(
                f"checkpoint config net.{key}: expected a number, string or bool, "
                f"got {type(value).__name__}"
            )
        kwargs[key] = value
    return kwargs


def build_net(net_cfg: dict[str, Any], src_vocab_size: int, tgt_vocab_size: int) -> Seq2Seq:
    """Build the network described by a (resolved) ``model.net`` config, from a checkpoint.

    Only :class:`Seq2Seq` with the attention and score classes of ``luong_lit.nn`` can be
    built; anything else raises :class:`CheckpointError` before any code is imported or run.
    """
    if (
        not isinstance(net_cfg, dict)
        or net_cfg.get("_target_", "luong_lit.nn.Seq2Seq") != "luong_lit.nn.Seq2Seq"
    ):
        target = net_cfg.get("_target_") if isinstance(net_cfg, dict) else net_cfg
        raise CheckpointError(f"checkpoint config net: {target!r} is not luong_lit.nn.Seq2Seq")
    kwargs = _net_kwargs(net_cfg)
    try:
        return Seq2Seq(src_vocab_size=src_vocab_size, tgt_vocab_size=tgt_vocab_size, **kwargs)
    except (TypeError, ValueError, RuntimeError) as err:  # e.g. a negative size
        raise CheckpointError(f"checkpoint config net: cannot build the model ({err})") from None


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


def read_checkpoint(path: str | os.PathLike, map_location: str = "cpu", mmap=False) -> dict:
    """A luong_lit checkpoint as a dict, read with ``torch.load(weights_only=True)``
    (``mmap``: its tensors mapped from the file, not read, for a look at its description).

    Raises :class:`CheckpointError` for a missing, unreadable or foreign file.
    """
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"{path}: checkpoint does not exist")
    try:
        ckpt = torch.load(path, map_location=map_location, weights_only=True, mmap=mmap)
    except pickle.UnpicklingError as err:  # what loading only tensors and plain data refused
        raise _unpickling_error(path, str(err)) from None
    except Exception as err:  # torch raises many types for corrupt files
        raise CheckpointError(f"{path}: not a readable checkpoint ({type(err).__name__})") from None
    meta = ckpt.get("luong_lit") if isinstance(ckpt, dict) else None
    if not isinstance(meta, dict) or "net" not in meta:
        raise CheckpointError(f"{path}: not a luong_lit checkpoint (no model description inside)")
    return ckpt


def load_model(
    path: str | os.PathLike, map_location: str = "cpu"
) -> tuple[Seq2Seq, Vocab, Vocab, dict]:
    """Load a trained model from a Lightning checkpoint with ``weights_only=True``.

    Returns the network in eval mode, the source and target vocabularies, and the stored
    metadata (net and data config).
    """
    path = Path(path)
    ckpt = read_checkpoint(path, map_location)
    meta = ckpt["luong_lit"]
    try:
        return _restore(ckpt, meta) + (meta,)
    except CheckpointError as err:
        raise CheckpointError(f"{path}: {err}") from None


def _restore(ckpt: dict, meta: dict) -> tuple[Seq2Seq, Vocab, Vocab]:
    """The network (eval mode) and both vocabularies, or a :class:`CheckpointError`."""
    try:
        src_vocab, tgt_vocab = Vocab(meta["src_vocab"]), Vocab(meta["tgt_vocab"])
    except (KeyError, TypeError, ValueError) as err:
        raise CheckpointError(f"damaged vocabularies ({type(err).__name__}: {err})") from None
    net = build_net(meta["net"], len(src_vocab), len(tgt_vocab))
    weights = ckpt.get("state_dict")
    if not isinstance(weights, dict):
        raise CheckpointError("no weights inside (state_dict is missing)")
    state = {
        k[len("net.") :]: v
        for k, v in weights.items()
        if isinstance(k, str) and k.startswith("net.")
    }
    try:
        net.load_state_dict(state)
    except RuntimeError as err:
        detail = str(err).strip().splitlines()
        raise CheckpointError(
            f"its weights do not fit the model it describes ({' '.join(detail[:2])[:300]})"
        ) from None
    return net.eval(), src_vocab, tgt_vocab


def load_models(paths, combine: str = "logits", map_location: str = "cpu"):
    """One model, or an :class:`~luong_lit.decoding.ensemble.Ensemble` of several checkpoints.

    All checkpoints must share both vocabularies. Returns ``(model, src_vocab, tgt_vocab,
    metas)`` with one metadata dict per checkpoint.
    """
    from luong_lit.decoding.ensemble import Ensemble

    paths = [Path(p) for p in paths]
    loaded = [load_model(p, map_location) for p in paths]
    _, src_vocab, tgt_vocab, _ = loaded[0]
    for p, (_, sv, tv, _) in zip(paths[1:], loaded[1:]):
        for side, a, b in (("source", src_vocab, sv), ("target", tgt_vocab, tv)):
            if a != b:
                raise CheckpointError(
                    f"{p}: its {side} vocabulary differs from that of {paths[0]} "
                    f"({len(b)} vs {len(a)} words); an ensemble needs shared vocabularies"
                )
    nets = [x[0] for x in loaded]
    model = nets[0] if len(nets) == 1 else Ensemble(nets, combine).eval()
    return model, src_vocab, tgt_vocab, [x[3] for x in loaded]


def run_directory(checkpoint: str | os.PathLike) -> Path:
    """The run directory of a checkpoint (``RUN/checkpoints/best.ckpt`` -> ``RUN``)."""
    parent = Path(checkpoint).resolve().parent
    if parent.name == "epochs" and parent.parent.name == "checkpoints":
        return parent.parent.parent
    return parent.parent if parent.name == "checkpoints" else parent
