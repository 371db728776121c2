"""The one table of attention and score names (paper §3.1–3.2, Eq. 8–9).

The model builder, the checkpoint loader and the report all look names up here. A config
names a part by ``name`` and gives its options beside it, e.g.
``{"name": "local_p", "D": 10}``; a bare string is a part with default options.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from luong_lit.errors import ConfigError
from luong_lit.nn import attention as attention_mod
from luong_lit.nn import scores as score_mod

ATTENTIONS: dict[str, type] = {
    "global": attention_mod.GlobalAttention,
    "local_m": attention_mod.LocalMonotonicAttention,
    "local_p": attention_mod.LocalPredictiveAttention,
}
SCORES: dict[str, type] = {
    "dot": score_mod.DotScore,
    "general": score_mod.GeneralScore,
    "concat": score_mod.ConcatScore,
    "location": score_mod.LocationScore,
}
_SCALARS = (bool, int, float, str, type(None))


def _legacy_name(target: str, table: dict[str, type]) -> str | None:
    """The name of a class given as ``luong_lit.nn.ClassName`` (configs of earlier versions)."""
    return next((name for name, c in table.items() if target == f"luong_lit.nn.{c.__name__}"), None)


def part_spec(node: Any, table: dict[str, type], kind: str) -> tuple[str, dict[str, Any]] | None:
    """``(name, options)`` of an attention or score given as a name, a ``{"name": ..., **options}``
    mapping, an earlier ``{"_target_": "luong_lit.nn.Class", ...}`` mapping, or None (no part).

    Raises :class:`ConfigError` naming the part for an unknown name or a non-scalar option,
    so that nothing but the classes of the table can ever be built from a config.
    """
    if node is None or node == "none":
        return None
    if isinstance(node, str):
        node = {"name": node}
    if not isinstance(node, Mapping):
        raise ConfigError(
            f"{kind}: expected a name or a mapping with a name, got {type(node).__name__}"
        )
    opts = {k: v for k, v in node.items() if k not in ("name", "_target_", "_partial_")}
    name = node.get("name")
    if "_target_" in node:  # a config of an earlier version: the class, by its import path
        target = node["_target_"]
        legacy = _legacy_name(target, table) if isinstance(target, str) else None
        if legacy is None or name not in (None, legacy):
            raise ConfigError(
                f"{kind}: {target!r} is not a luong_lit.nn {kind} class "
                f"({', '.join(sorted(table))})"
            )
        name = legacy
    if name not in table:
        raise ConfigError(f"{kind}={name!r} is unknown; choose one of {sorted(table)}")
    for key, value in opts.items():
        if not isinstance(value, _SCALARS):
            raise ConfigError(
                f"{kind}.{key}: expected a number, string or bool, got {type(value).__name__}"
            )
    return name, opts


def attention_name(node: Any) -> str:
    """The attention's name in a (saved) config, ``none`` for the baseline without attention."""
    spec = part_spec(node, ATTENTIONS, "attention")
    return "none" if spec is None else spec[0]


def score_name(node: Any) -> str | None:
    """The score's name in a (saved) config, or None."""
    spec = part_spec(node, SCORES, "score")
    return None if spec is None else spec[0]
