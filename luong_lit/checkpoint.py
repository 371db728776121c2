"""Atomic checkpoint writes and safe loading of trained models."""
from __future__ import annotations

import functools
import os
import tempfile
from pathlib import Path
from typing import Any

import torch
from lightning.pytorch.plugins.io import TorchCheckpointIO

from luong_lit import nn
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


#: The only classes a checkpoint's model description may name (R2's building blocks).
_NET_PARTS = {f"luong_lit.nn.{c.__name__}": c for c in (
    nn.GlobalAttention, nn.LocalMonotonicAttention, nn.LocalPredictiveAttention,
    nn.DotScore, nn.GeneralScore, nn.ConcatScore, nn.LocationScore)}
_SCALARS = (bool, int, float, str, type(None))


def _part(node: Any, where: str) -> Any:
    """A scalar, or ``functools.partial`` of an allowed class with scalar arguments.

    A checkpoint is untrusted: it may name only the classes above, never any other callable
    (``hydra.utils.instantiate`` would import and call whatever ``_target_`` names).
    """
    if isinstance(node, _SCALARS):
        return node
    target = node.get("_target_") if isinstance(node, dict) else type(node).__name__
    if not isinstance(node, dict) or not isinstance(target, str) or target not in _NET_PARTS:
        raise CheckpointError(f"checkpoint config {where}: {target!r} is not a luong_lit.nn "
                              f"attention or score class ({', '.join(sorted(_NET_PARTS))})")
    kwargs = {k: v for k, v in node.items() if k not in ("_target_", "_partial_")}
    for key, value in kwargs.items():
        if not isinstance(value, _SCALARS):
            raise CheckpointError(f"checkpoint config {where}.{key}: expected a number, string or "
                                  f"bool, got {type(value).__name__}")
    return functools.partial(_NET_PARTS[target], **kwargs)


def build_net(net_cfg: dict[str, Any], src_vocab_size: int, tgt_vocab_size: int) -> Seq2Seq:
    """Build the network described by a (resolved) ``model.net`` config, from a checkpoint.

    Only :class:`Seq2Seq` with the attention and score classes of ``luong_lit.nn`` can be
    built; anything else raises :class:`CheckpointError` before any code is imported or run.
    """
    if not isinstance(net_cfg, dict) or net_cfg.get("_target_", "luong_lit.nn.Seq2Seq") != "luong_lit.nn.Seq2Seq":
        target = net_cfg.get("_target_") if isinstance(net_cfg, dict) else net_cfg
        raise CheckpointError(f"checkpoint config net: {target!r} is not luong_lit.nn.Seq2Seq")
    kwargs = {k: _part(v, f"net.{k}") for k, v in net_cfg.items() if k not in ("_target_", "_partial_")}
    try:
        return Seq2Seq(src_vocab_size=src_vocab_size, tgt_vocab_size=tgt_vocab_size, **kwargs)
    except (TypeError, ValueError, RuntimeError) as err:  # e.g. a negative size
        raise CheckpointError(f"checkpoint config net: cannot build the model ({err})") from None


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
    if not isinstance(meta, dict) or "net" not in meta:
        raise CheckpointError(f"{path}: not a luong_lit checkpoint (no model description inside)")
    try:
        return _restore(ckpt, meta) + (meta,)
    except CheckpointError as err:
        raise CheckpointError(f"{path}: {err}") from None


def _restore(ckpt: dict, meta: dict) -> tuple[Seq2Seq, Vocab, Vocab]:
    """The network (eval mode) and both vocabularies, or a :class:`CheckpointError` saying what is damaged."""
    try:
        src_vocab, tgt_vocab = Vocab(meta["src_vocab"]), Vocab(meta["tgt_vocab"])
    except (KeyError, TypeError, ValueError) as err:
        raise CheckpointError(f"damaged vocabularies ({type(err).__name__}: {err})") from None
    net = build_net(meta["net"], len(src_vocab), len(tgt_vocab))
    weights = ckpt.get("state_dict")
    if not isinstance(weights, dict):
        raise CheckpointError("no weights inside (state_dict is missing)")
    state = {k[len("net."):]: v for k, v in weights.items() if isinstance(k, str) and k.startswith("net.")}
    try:
        net.load_state_dict(state)
    except RuntimeError as err:
        detail = str(err).strip().splitlines()
        raise CheckpointError(f"its weights do not fit the model it describes ({' '.join(detail[:2])[:300]})") from None
    return net.eval(), src_vocab, tgt_vocab


def stored_tokenizers(meta: dict) -> dict | None:
    """The sentencepiece tokenisers a checkpoint keeps (``src``, ``tgt``), or None if it keeps none."""
    from luong_lit.data.tokenize import SentencePieceTokenizer

    protos = meta.get("sentencepiece")
    if not protos:
        return None
    lowercase = bool(((meta.get("data") or {}).get("tokenizer_opts") or {}).get("lowercase", False))
    try:
        return {side: SentencePieceTokenizer.from_proto(protos[side], lowercase) for side in ("src", "tgt")}
    except (KeyError, TypeError, ValueError) as err:
        raise CheckpointError(f"the checkpoint's sentencepiece models are damaged ({err})") from None


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
