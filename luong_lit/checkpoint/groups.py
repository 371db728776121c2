"""The groups of a checkpoint's description, read into the option dataclasses that define them:
``net`` into :class:`~luong_lit.nn.options.NetOptions`, ``data`` into
:class:`~luong_lit.data.loading.options.DataOptions`, and ``preprocess`` into
:class:`~luong_lit.data.text.preprocess.Preprocessing`.

A key a group lacks takes its option's default, written once, in the option's dataclass; a key
no option has is kept, unread, in the group's ``config``, which the checkpoint writes back as it
was. The values are read as stored, the options' checks not run again: they ran when the run was
configured, and they run where the network or the datamodule is made from ``config``
(:func:`~luong_lit.checkpoint.models.build_net`,
:func:`~luong_lit.data.loading.model_data.datamodule_for`), so a checkpoint loads as it always
has (one whose corpus is not registered in this process too). A value whose group makes a dict
of it (``data.test``, ``data.tokenizer_opts``) is made one here as there.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from luong_lit.data.loading.options import Batching, Corpus, DataOptions, Tokenisation
from luong_lit.data.text.preprocess import Preprocessing
from luong_lit.errors import CheckpointError, ConfigError
from luong_lit.nn.options import Architecture, Initialisation, NetOptions, Regularisation, Sizes

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

Group = TypeVar("Group", bound="DataclassInstance")


def net_options(config: Mapping[str, Any]) -> NetOptions:
    """A checkpoint's ``net`` (a resolved ``model.net`` config) as its option groups."""
    return NetOptions(
        sizes=as_stored(Sizes, config, "net"),
        architecture=as_stored(Architecture, config, "net"),
        regularisation=as_stored(Regularisation, config, "net"),
        initialisation=as_stored(Initialisation, config, "net"),
        config=dict(config),
    )


def data_options(config: Mapping[str, Any]) -> DataOptions:
    """A checkpoint's ``data`` (a resolved data config) as its option groups."""
    return DataOptions(
        corpus=as_stored(Corpus, config, "data"),
        tokenisation=as_stored(Tokenisation, config, "data"),
        batching=as_stored(Batching, config, "data"),
        config=dict(config),
    )


def preprocessing(stored: Mapping[str, Any]) -> Preprocessing:
    """A checkpoint's ``preprocess``: the recipe of its corpus (a step it lacks: not taken)."""
    try:
        return Preprocessing.from_dict(stored, "preprocess")
    except ConfigError as err:  # a step this luong_lit does not know
        raise CheckpointError(str(err)) from None


def as_stored(group: type[Group], config: Mapping[str, Any], where: str) -> Group:
    """The option group ``group`` holding the values ``config`` has for its fields, and its own
    defaults for the rest, its checks not run (the module's doc); ``where``: the config's name
    in an error (``data``)."""
    made = group()  # the defaults, as the group makes them
    for f in dataclasses.fields(made):
        if f.name in config:
            value = _held(getattr(made, f.name), config[f.name], f"{where}.{f.name}")
            object.__setattr__(made, f.name, value)  # frozen: set as its own __init__ sets it
    return made


def _held(default: Any, value: Any, where: str) -> Any:
    """``value`` as its group holds it: a dict where the group makes one of a mapping (None:
    the empty one), else as it is."""
    if not isinstance(default, dict):
        return value
    try:
        return dict(value or {})
    except (TypeError, ValueError):
        raise CheckpointError(f"{where} should be a dict, got {type(value).__name__}") from None
