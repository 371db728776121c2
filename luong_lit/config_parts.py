"""Registered attentions and scores as options of the ``attention`` and ``score`` config groups.

A part registered in Python (:func:`luong_lit.nn.register_attention`,
:func:`luong_lit.nn.register_score`) that has no file in ``conf/`` is offered to Hydra as
``attention=NAME`` (``score=NAME``): a node ``{name: NAME, **options}`` of its group, its options
the scalar keyword defaults of its constructor, so that ``model.net.attention.D=2`` sets one.
:mod:`luong_lit.config` installs this when it is imported (:func:`offer_parts`).
"""

from __future__ import annotations

import inspect
from typing import Any

from luong_lit.registry import Registry
from luong_lit.resources import CONF_DIR

GROUPS = ("attention", "score")  # registries whose names are config groups of model.net
GIVEN = ("score", "dim", "bias")  # what the model builder hands a part, not a config option
_SCALARS = (bool, int, float, str, type(None))


def constructor_defaults(cls: type) -> dict[str, Any]:
    """The scalar keyword defaults of ``cls``'s constructor and of those of its bases that it
    hands its ``**kwargs`` on to, less what the builder gives (:data:`GIVEN`)."""
    out: dict[str, Any] = {}
    for klass in cls.__mro__:
        init = vars(klass).get("__init__")
        if init is None:
            continue
        params = list(inspect.signature(init).parameters.values())[1:]  # without self
        for p in params:
            if p.name not in GIVEN and p.default is not p.empty and isinstance(p.default, _SCALARS):
                out.setdefault(p.name, p.default)
        if not any(p.kind is p.VAR_KEYWORD for p in params):
            break
    return out


def _offer(registry: Registry, name: str, entry: Any) -> None:
    """Store ``entry`` as option ``name`` of its config group, unless ``conf/`` has a file."""
    group = registry.kind
    if group not in GROUPS or (CONF_DIR / group / f"{name}.yaml").is_file():
        return
    from hydra.core.config_store import ConfigStore

    node = {group: {"name": name, **constructor_defaults(entry)}}
    ConfigStore.instance().store(group=group, name=name, node=node, package="model.net")


def offer_parts() -> None:
    """Offer every registered attention and score, now and to come, as a config group option."""
    Registry.on_add(_offer)
