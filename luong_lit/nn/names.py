"""The registries of attention and score names (paper §3.1–3.2, Eq. 8–9).

Every attention and every score, the built-in ones as any other, is added to its registry by a
class decorator (:func:`~luong_lit.nn.attention.register_attention`,
:func:`~luong_lit.nn.scores.register_score`) under the name that configs and checkpoints give
it. The model builder, the checkpoint loader and the report all look names up here, so nothing
but a registered class is ever built from a config or a checkpoint. A config names a part by
``name`` and gives its options beside it, e.g. ``{"name": "local_p", "D": 10}``; a bare string is
a part with default options. The built-in classes are registered when :mod:`luong_lit.nn` is
imported, which any import of this module does first.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from luong_lit.errors import ConfigError
from luong_lit.registry import SCALARS, Registry

ATTENTIONS = Registry("attention")
SCORES = Registry("score")
C = TypeVar("C", bound=type)


def registrar(table: Registry, base: type, name: str) -> Callable[[C], C]:
    """A class decorator that adds a subclass of ``base`` to ``table`` as ``name``."""

    def add(cls: C) -> C:
        if not (isinstance(cls, type) and issubclass(cls, base)):
            raise TypeError(f"{table.kind} {name!r}: {cls!r} is not a subclass of {base.__name__}")
        table.add(name, cls)
        return cls

    return add


def build_part(
    cls: type, options: Mapping[str, Any], given: Mapping[str, Any], **fixed: Any
) -> Any:
    """``cls(**fixed, **given, **options)``, handing it of ``given`` (``dim``, ``bias``) only
    what its constructor names (all of it where it takes ``**kwargs``); an option of the config
    takes the place of a given value of the same name, never of a ``fixed`` one (``score``)."""
    params = inspect.signature(cls).parameters.values()
    takes_all = any(p.kind is p.VAR_KEYWORD for p in params)
    names = {p.name for p in params}
    passed = {k: v for k, v in given.items() if takes_all or k in names}
    return cls(**fixed, **{**passed, **options})


def _legacy_name(target: str, table: Registry) -> str | None:
    """The name of a built-in class given as ``luong_lit.nn.ClassName`` (configs of earlier
    versions)."""
    return next(
        (
            name
            for name, c in table.items()
            if c.__module__.startswith("luong_lit.nn.") and target == f"luong_lit.nn.{c.__name__}"
        ),
        None,
    )


def part_spec(node: Any, table: Registry, kind: str) -> tuple[str, dict[str, Any]] | None:
    """``(name, options)`` of an attention or score given as a name, a ``{"name": ..., **options}``
    mapping, an earlier ``{"_target_": "luong_lit.nn.Class", ...}`` mapping, or None (no part).

    Raises :class:`ConfigError` naming the part for an unknown name or a non-scalar option,
    so that nothing but the registered classes can ever be built from a config.
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
        if not isinstance(value, SCALARS):
            raise ConfigError(
                f"{kind}.{key}: expected a number, string or bool, got {type(value).__name__}"
            )
    return str(name), opts


def attention_name(node: Any) -> str:
    """The attention's name in a (saved) config, ``none`` for the baseline without attention."""
    spec = part_spec(node, ATTENTIONS, "attention")
    return "none" if spec is None else spec[0]


def score_name(node: Any) -> str | None:
    """The score's name in a (saved) config, or None."""
    spec = part_spec(node, SCORES, "score")
    return None if spec is None else spec[0]
