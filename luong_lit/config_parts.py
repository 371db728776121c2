"""The attentions and scores as options of the ``attention`` and ``score`` config groups.

Each part declares its options once, as the keyword defaults of its constructor: the kit's own
(:mod:`luong_lit.nn.attention`, :mod:`luong_lit.nn.scores`) and those a user registers
(:func:`luong_lit.nn.register_attention`, :func:`luong_lit.nn.register_score`) alike. Every
registered part is offered to Hydra as ``attention=NAME`` (``score=NAME``): a node ``{name:
NAME, **options}`` of its group, its options the scalar keyword defaults of its constructor, so
that ``model.net.attention.D=2`` sets one. :mod:`luong_lit.config` reads the registries this way
each time it composes (:func:`offer_parts`). ``conf/attention/none.yaml`` is the one file of
these groups: no attention, which is no part.
"""

from __future__ import annotations

import inspect
from typing import Any

from luong_lit.registry import SCALARS, Registry
from luong_lit.resources import CONF_DIR

GROUPS = ("attention", "score")  # registries whose names are config groups of model.net
GIVEN = ("score", "dim", "bias")  # what the model builder hands a part, not a config option


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
            if p.name not in GIVEN and p.default is not p.empty and isinstance(p.default, SCALARS):
                out.setdefault(p.name, p.default)
        if not any(p.kind is p.VAR_KEYWORD for p in params):
            break
    return out


def _registries(group: str) -> list[Registry]:
    """The registries of ``group``, the kit's own parts registered in them."""
    import luong_lit.nn  # noqa: F401 - the kit's own parts register as it is imported

    return Registry.of_kind(group)


def registered(group: str) -> list[str]:
    """The names of the parts of ``group`` registered so far, the kit's own among them."""
    return sorted(name for registry in _registries(group) for name in registry)


def offer_parts() -> None:
    """Offer every attention and score registered so far as a config group option, unless
    ``conf/`` has a file of that name."""
    from hydra.core.config_store import ConfigStore

    for group in GROUPS:
        for registry in _registries(group):
            for name, entry in registry.items():
                if not (CONF_DIR / group / f"{name}.yaml").is_file():
                    node = {group: {"name": name, **constructor_defaults(entry)}}
                    ConfigStore.instance().store(group=group, name=name, node=node,
                                                 package="model.net")  # fmt: skip
