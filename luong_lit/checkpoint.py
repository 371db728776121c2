"""Atomic checkpoint writes and safe loading of trained models."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import torch
from lightning.pytorch.plugins.io import TorchCheckpointIO

from luong_lit.data.vocab import Vocab
from luong_lit.nn import Seq2Seq


class CheckpointError(ValueError):
    """A checkpoint that is missing, corrupt or not a luong_lit model."""


class AtomicCheckpointIO(TorchCheckpointIO):
    """Write to a temporary file in the same directory, then rename over the target.

    A crash mid-write leaves the previous checkpoint intact: finished work is never lost.
    """

    def save_checkpoint(self, checkpoint: dict[str, Any], path, storage_options=None) -> None:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
        try:
            with os.fdopen(fd, "wb") as fh:
                torch.save(checkpoint, fh)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise


def _check_targets(node: Any, where: str = "net") -> None:
    """Refuse any ``_target_`` outside ``luong_lit.nn``: a checkpoint must not run code."""
    if isinstance(node, dict):
        target = node.get("_target_")
        if target is not None and not str(target).startswith("luong_lit.nn."):
            raise CheckpointError(f"checkpoint config {where}._target_={target!r} is not a luong_lit.nn class")
        for key, value in node.items():
            _check_targets(value, f"{where}.{key}")


def build_net(net_cfg: dict[str, Any], src_vocab_size: int, tgt_vocab_size: int) -> Seq2Seq:
    """Instantiate the network described by a (resolved) ``model.net`` config."""
    from hydra.utils import instantiate

    _check_targets(net_cfg)
    cfg = {k: v for k, v in net_cfg.items() if k not in ("_target_", "_partial_")}
    factory = instantiate({"_target_": "luong_lit.nn.Seq2Seq", "_partial_": True, **cfg})
    return factory(src_vocab_size=src_vocab_size, tgt_vocab_size=tgt_vocab_size)


def load_model(path: str | os.PathLike, map_location: str = "cpu") -> tuple[Seq2Seq, Vocab, Vocab, dict]:
    """Load a trained model from a Lightning checkpoint with ``weights_only=True``.

    Returns the network in eval mode, the source and target vocabularies, and the stored
    metadata (net and data config).
    """
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"{path}: checkpoint does not exist")
    try:
        ckpt = torch.load(path, map_location=map_location, weights_only=True)
    except Exception as err:  # torch raises many types for corrupt files
        raise CheckpointError(f"{path}: not a readable checkpoint ({type(err).__name__}: {err})") from None
    meta = ckpt.get("luong_lit") if isinstance(ckpt, dict) else None
    if not meta or "net" not in meta:
        raise CheckpointError(f"{path}: not a luong_lit checkpoint (no model description inside)")
    src_vocab, tgt_vocab = Vocab(meta["src_vocab"]), Vocab(meta["tgt_vocab"])
    net = build_net(meta["net"], len(src_vocab), len(tgt_vocab))
    state = {k[len("net."):]: v for k, v in ckpt["state_dict"].items() if k.startswith("net.")}
    net.load_state_dict(state)
    return net.eval(), src_vocab, tgt_vocab, meta


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
                raise CheckpointError(f"{p}: its {side} vocabulary differs from that of {paths[0]} "
                                      f"({len(b)} vs {len(a)} words); an ensemble needs shared vocabularies")
    nets = [x[0] for x in loaded]
    model = nets[0] if len(nets) == 1 else Ensemble(nets, combine).eval()
    return model, src_vocab, tgt_vocab, [x[3] for x in loaded]
