"""Whether a checkpoint may be resumed with a training config: the weights of the model it
describes (:class:`~luong_lit.checkpoint.meta.CheckpointMeta`) must fit the model the config
asks for. A checkpoint of another model is refused before any weight is loaded, in one line
that says what it was trained with, what the command asks for, and how to resume it as it was.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from luong_lit.checkpoint.files import read_meta
from luong_lit.checkpoint.meta import CheckpointMeta
from luong_lit.checkpoint.models import NOT_NET_ARGS, build_net
from luong_lit.errors import ConfigError

if TYPE_CHECKING:
    from omegaconf import DictConfig
    from torch import nn


def _described(value: Any) -> str:
    if isinstance(value, dict) and "name" in value:
        opts = ", ".join(f"{k}={v}" for k, v in value.items() if k != "name")
        return str(value["name"]) + (f" ({opts})" if opts else "")
    return str(value).lower() if isinstance(value, bool) else str(value)


def _as_override(key: str, value: Any) -> str:
    if isinstance(value, dict) and "name" in value:  # an attention or a score: its group
        return f"{key}={value['name']}"
    return f"model.net.{key}={_described(value)}"


def _shapes(net: nn.Module) -> dict[str, tuple[int, ...]]:
    return {k: tuple(v.shape) for k, v in net.state_dict().items()}


def check_resumable(
    path: Path, net: DictConfig, ckpt_path: str, meta: CheckpointMeta | None = None
) -> None:
    """Refuse to resume the checkpoint ``path`` into another model than ``net`` (the config's
    ``model.net``): say what it was trained with, what the command asks for, and how to resume
    it as it was (``ckpt_path`` as given), before any weight is loaded. ``meta``: its
    description, where the caller has read it already."""
    import torch
    from omegaconf import OmegaConf

    meta = read_meta(path) if meta is None else meta
    was = meta.net.config  # the keys it was trained with, as stored
    now = cast(dict[str, Any], OmegaConf.to_container(net, resolve=True))  # a group
    with torch.device("meta"):  # the two models' weights, none allocated
        same = _shapes(build_net(was, 8, 8)) == _shapes(build_net(now, 8, 8))
    if same:
        return  # the same weights (another dropout, say): Lightning resumes it
    keys = sorted(
        k for k in set(was) | set(now) if k not in NOT_NET_ARGS and was.get(k) != now.get(k)
    )
    trained = ", ".join(f"{k}={_described(was.get(k))}" for k in keys)
    asked = ", ".join(f"{k}={_described(now.get(k))}" for k in keys)
    fix = list(meta.overrides) or [_as_override(k, was.get(k)) for k in keys if k in was]
    raise ConfigError(
        f"{path} was trained with {trained}, and this command asks for {asked}: its weights "
        f"would not fit. Resume it as it was: python -m luong_lit.train "
        f"hydra.run.dir={path.parent.parent} ckpt_path={ckpt_path} {' '.join(fix)}"
    )
