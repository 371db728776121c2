"""The one builder of the network: the :class:`~luong_lit.nn.seq2seq.Seq2Seq` that a (resolved)
``model.net`` description asks for, with the vocabulary sizes known only once the data is read.

Training builds its network here from ``model.net``, and every checkpoint from the description
it keeps (:mod:`luong_lit.checkpoint.models`, which first drops the keys of earlier versions).
The description is data, never code: each key must be an argument of ``Seq2Seq``, each value a
scalar, and the attention and score names registered in this process (:mod:`luong_lit.nn.names`).
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any

from luong_lit.errors import ConfigError
from luong_lit.nn.names import ATTENTIONS, SCORES, part_spec
from luong_lit.nn.seq2seq import Seq2Seq
from luong_lit.registry import SCALARS
from luong_lit.validate import UnknownOption

#: a description's parts: an attention or a score (a registered name with scalar options);
#: any other key holds a scalar (:data:`~luong_lit.registry.SCALARS`)
PARTS = {"attention": ATTENTIONS, "score": SCORES}
#: arguments that the builder gives, never the description
GIVEN = ("src_vocab_size", "tgt_vocab_size")


def net_arguments() -> list[str]:
    """The keys a description may hold: ``Seq2Seq``'s keyword arguments but the given sizes."""
    return [name for name in inspect.signature(Seq2Seq).parameters if name not in GIVEN]


def net_kwargs(config: Mapping[str, Any]) -> dict[str, Any]:
    """The arguments of :class:`Seq2Seq` in a description, checked key by key; a
    :class:`ConfigError` names the first value that is not a scalar (``hidden_size: expected
    ...``), part that is not registered, or key that is not an argument (an
    :class:`~luong_lit.validate.UnknownOption`, which training names by its path:
    ``model.net.hiden_size``)."""
    known = net_arguments()
    kwargs: dict[str, Any] = {}
    for key, value in config.items():
        if key in PARTS:
            spec = part_spec(value, PARTS[key], key)
            value = None if spec is None else {"name": spec[0], **spec[1]}
        elif not isinstance(value, SCALARS):
            kind = type(value).__name__
            raise ConfigError(f"{key}: expected a number, string or bool, got {kind}")
        elif key not in known:
            why = "is not an option of luong_lit.nn.Seq2Seq; its options: " + ", ".join(known)
            raise UnknownOption(key, why=why)
        kwargs[key] = value
    return kwargs


def build_net(config: Mapping[str, Any], src_vocab_size: int, tgt_vocab_size: int) -> Seq2Seq:
    """``Seq2Seq(src_vocab_size, tgt_vocab_size, **config)``, its keys checked first
    (:func:`net_kwargs`); the network's own checks (an
    :class:`~luong_lit.validate.OptionError`, naming the option) pass as they are."""
    kwargs = net_kwargs(config)
    return Seq2Seq(src_vocab_size=src_vocab_size, tgt_vocab_size=tgt_vocab_size, **kwargs)
