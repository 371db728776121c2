"""Trained models from checkpoints: the network a checkpoint describes, built without running
anything it holds, its weights, its vocabularies, and ensembles of several."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from luong_lit.checkpoint.files import read_checkpoint
from luong_lit.checkpoint.meta import CheckpointMeta
from luong_lit.data.vocab import Vocab
from luong_lit.errors import CheckpointError, ConfigError
from luong_lit.nn import Seq2Seq
from luong_lit.nn.build import PARTS
from luong_lit.nn.build import build_net as built
from luong_lit.validate import OptionError

#: Keys of a model description that earlier versions stored and that are not :class:`Seq2Seq`
#: arguments (``_target_``/``_partial_``: Hydra's, ``impl``: how the model was computed): the
#: one table of old names, dropped before the description is built.
NOT_NET_ARGS = frozenset({"_target_", "_partial_", "impl"})


def build_net(net_cfg: dict[str, Any], src_vocab_size: int, tgt_vocab_size: int) -> Seq2Seq:
    """The network a checkpoint's (resolved) ``model.net`` description asks for, built by the
    network's one builder (:func:`luong_lit.nn.build.build_net`, as training builds it).

    A checkpoint is untrusted: only :class:`Seq2Seq` with registered attention and score classes
    and scalar options can be built; anything else raises :class:`CheckpointError` before any
    code is imported or run.
    """
    if (
        not isinstance(net_cfg, dict)
        or net_cfg.get("_target_", "luong_lit.nn.Seq2Seq") != "luong_lit.nn.Seq2Seq"
    ):
        target = net_cfg.get("_target_") if isinstance(net_cfg, dict) else net_cfg
        raise CheckpointError(f"checkpoint config net: {target!r} is not luong_lit.nn.Seq2Seq")
    current = {k: v for k, v in net_cfg.items() if k not in NOT_NET_ARGS}
    try:
        return built(current, src_vocab_size, tgt_vocab_size)
    except (TypeError, ValueError, RuntimeError) as err:
        if isinstance(err, ConfigError) and not isinstance(err, OptionError):
            # a part not registered here, a value that is not a scalar: named by its key
            raise CheckpointError(f"checkpoint config net.{err}") from None
        # a key the network lacks, a value it refuses (a negative size)
        raise CheckpointError(f"checkpoint config net: cannot build the model ({err})") from None


def load_model(
    path: str | os.PathLike, map_location: str = "cpu"
) -> tuple[Seq2Seq, Vocab, Vocab, CheckpointMeta]:
    """Load a trained model from a Lightning checkpoint with ``weights_only=True``.

    Returns the network in eval mode, the source and target vocabularies, and the stored
    description (:class:`~luong_lit.checkpoint.meta.CheckpointMeta`).
    """
    path = Path(path)
    ckpt = read_checkpoint(path, map_location)
    meta = CheckpointMeta.of(ckpt, path)
    try:
        return _restore(ckpt, meta) + (meta,)
    except CheckpointError as err:
        raise CheckpointError(f"{path}: {err}") from None


def _restore(ckpt: dict, meta: CheckpointMeta) -> tuple[Seq2Seq, Vocab, Vocab]:
    """The network (eval mode) and both vocabularies, or a :class:`CheckpointError`."""
    try:
        src_vocab, tgt_vocab = Vocab(meta.src_vocab), Vocab(meta.tgt_vocab)
    except (TypeError, ValueError) as err:
        raise CheckpointError(f"damaged vocabularies ({type(err).__name__}: {err})") from None
    _check_parts(meta)
    net = build_net(meta.net.config, len(src_vocab), len(tgt_vocab))
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


def _check_parts(meta: CheckpointMeta) -> None:
    """Each attention and score the model names is registered here; else one line saying what
    registered it when the model was trained, and how to load it (nothing is imported)."""
    from luong_lit.plugins import how_to_load

    for kind, table in PARTS.items():
        node = meta.net.config.get(kind)
        name = node.get("name") if isinstance(node, dict) else node
        if isinstance(name, str) and name != "none" and name not in table:
            raise CheckpointError(f"its model's {kind} {name!r} is not registered here; "
                                  f"{how_to_load(meta.parts, kind, name)}")  # fmt: skip


def load_models(paths, combine: str = "logits", map_location: str = "cpu"):
    """One model, or an :class:`~luong_lit.decoding.ensemble.Ensemble` of several checkpoints.

    All checkpoints must share both vocabularies. Returns ``(model, src_vocab, tgt_vocab,
    metas)`` with one :class:`~luong_lit.checkpoint.meta.CheckpointMeta` per checkpoint.
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
