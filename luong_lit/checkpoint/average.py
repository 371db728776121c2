"""Averaging the weights of several checkpoints of one model into a new checkpoint.

The result holds the element-wise mean of every parameter and the first checkpoint's model
description and vocabularies, so ``translate``, ``evaluate`` and ``align`` load it like any other
checkpoint. It holds no optimizer state: it is for decoding, not for resuming. All inputs must
describe the same network and vocabularies (an ensemble of different models is loaded from
several checkpoints instead).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import torch

from luong_lit.checkpoint.files import atomic_save, read_checkpoint
from luong_lit.checkpoint.meta import KEY, CheckpointMeta
from luong_lit.errors import CheckpointError

_SAME = ("net", "src_vocab", "tgt_vocab")  # what every averaged checkpoint must share


def _read(path: Path) -> tuple[dict[str, torch.Tensor], CheckpointMeta]:
    """A checkpoint's weights and its description."""
    ckpt = read_checkpoint(path)
    if "state_dict" not in ckpt:
        raise CheckpointError(f"{path}: no weights inside (state_dict is missing)")
    return ckpt["state_dict"], CheckpointMeta.of(ckpt, path)


def average_state_dicts(states: Sequence[dict[str, torch.Tensor]]) -> dict[str, torch.Tensor]:
    """Element-wise mean of floating-point tensors; other entries are taken from the first."""
    out: dict[str, torch.Tensor] = {}
    for key, first in states[0].items():
        if first.is_floating_point():
            acc = torch.zeros_like(first, dtype=torch.float64)
            for s in states:
                acc += s[key].double()
            out[key] = (acc / len(states)).to(first.dtype)
        else:
            out[key] = first.clone()
    return out


def _check_same_model(
    paths: Sequence[Path],
    states: Sequence[dict[str, torch.Tensor]],
    metas: Sequence[CheckpointMeta],
) -> None:
    """Every checkpoint describes the first one's network, vocabularies and parameter shapes."""
    shapes = {k: v.shape for k, v in states[0].items()}
    for p, state, meta in zip(paths[1:], states[1:], metas[1:]):
        for field in _SAME:
            if getattr(meta, field) != getattr(metas[0], field):
                raise CheckpointError(
                    f"{p}: its {field} differs from that of {paths[0]}; "
                    "only checkpoints of one model can be averaged"
                )
        if {k: v.shape for k, v in state.items()} != shapes:
            raise CheckpointError(
                f"{p}: its parameters differ in name or shape from those of {paths[0]}"
            )


def average_checkpoints(paths: Sequence[str | Path], out: str | Path) -> Path:
    """Write the average of ``paths`` to ``out`` (atomically) and return ``out``."""
    files = [Path(p) for p in paths]
    if not files:
        raise CheckpointError("no checkpoints to average")
    states, metas = zip(*(_read(p) for p in files))
    _check_same_model(files, states, metas)
    state = average_state_dicts(states)
    meta = metas[0].replace(averaged_from=tuple(p.name for p in files))
    return atomic_save({"state_dict": state, KEY: meta.to_dict()}, out)
