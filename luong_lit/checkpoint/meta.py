"""What a checkpoint keeps beside its weights (``ckpt["luong_lit"]``), as one typed, versioned
schema: :class:`CheckpointMeta`. Training writes it (:mod:`luong_lit.training.build`), and
everything that reads a checkpoint reads it through :meth:`CheckpointMeta.of`.

What is stored is plain data (strings, numbers, bytes, lists and dicts), so that
``torch.load(weights_only=True)`` reads it. A checkpoint is untrusted: every field's type is
checked, and a description that cannot be read (a newer version, a missing field, a field of
the wrong type) is refused with a :class:`~luong_lit.errors.CheckpointError` naming the file.

Versions:

1. no ``version`` key: ``net``, ``src_vocab`` and ``tgt_vocab``, and where they were known
   ``data``, ``overrides``, ``preprocess``, ``recaser``, ``sentencepiece`` and
   ``averaged_from`` (any other key is left unread);
2. ``version: 2``: the same fields, ``data`` and ``overrides`` always there, and ``parts``
   where the model names a part of a user's own; nothing else.

The groups ``net``, ``data`` and ``preprocess`` are read into the option dataclasses that define
them (:mod:`luong_lit.checkpoint.groups`), a key they lack with its option's default; ``net`` and
``data`` are written back with the keys they were read with.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from luong_lit.checkpoint.groups import data_options, net_options, preprocessing
from luong_lit.data.loading.options import DataOptions
from luong_lit.data.text.preprocess import Preprocessing
from luong_lit.errors import CheckpointError
from luong_lit.nn.options import NetOptions

KEY = "luong_lit"  #: where a checkpoint keeps its description
VERSION = 2  #: the version this kit writes
Source = str | os.PathLike[str]  #: the file an error names
_REQUIRED = {  # the fields a description of each version always holds
    1: ("net", "src_vocab", "tgt_vocab"),
    2: ("net", "src_vocab", "tgt_vocab", "data", "overrides"),
}


@dataclass(frozen=True)
class CheckpointMeta:
    """A trained model's description: what decoding needs besides the weights, without the
    training data.

    Attributes:
        net: the resolved ``model.net`` config, as its option groups (the network is built from
            its ``config`` by :func:`~luong_lit.checkpoint.build_net`).
        src_vocab, tgt_vocab: the vocabularies' symbols, ids 0–3 the specials.
        data: the resolved ``data`` config, as its option groups (how the text was read and
            tokenised).
        overrides: the command line's overrides of the run (to resume it as it was).
        preprocess: the corpus's preprocessing recipe, where the kit does not tokenise, else
            None.
        recaser: lowercase form → cased form, for a lowercased corpus with a cased text.
        sentencepiece: the serialised sentencepiece models (``src``, ``tgt``), if any.
        averaged_from: for an average of checkpoints, their file names.
        parts: for each part the model names that the kit does not have (``attention NAME``),
            what registered it when it was trained (:func:`luong_lit.plugins.parts_of`).
        version: the schema's version the description was written in (1: no version key).
    """

    net: NetOptions
    src_vocab: tuple[str, ...]
    tgt_vocab: tuple[str, ...]
    data: DataOptions = field(default_factory=DataOptions)
    overrides: tuple[str, ...] = ()
    preprocess: Preprocessing | None = None
    recaser: dict[str, str] | None = None
    sentencepiece: dict[str, bytes] | None = None
    averaged_from: tuple[str, ...] | None = None
    parts: dict[str, str] | None = None
    version: int = VERSION

    def to_dict(self) -> dict[str, Any]:
        """What a checkpoint stores: plain data, in the current version (fields that are None
        are left out)."""
        out: dict[str, Any] = {
            "version": VERSION,
            "net": dict(self.net.config),
            "src_vocab": list(self.src_vocab),
            "tgt_vocab": list(self.tgt_vocab),
            "data": dict(self.data.config),
            "overrides": list(self.overrides),
        }
        if self.preprocess is not None:
            out["preprocess"] = self.preprocess.to_dict()
        for name in ("recaser", "sentencepiece", "parts"):
            if getattr(self, name) is not None:
                out[name] = dict(getattr(self, name))
        if self.averaged_from is not None:
            out["averaged_from"] = list(self.averaged_from)
        return out

    @classmethod
    def from_dict(cls, raw: Any, source: Source = "checkpoint") -> CheckpointMeta:
        """The description ``raw`` (version 1 or 2), every field checked; ``source``: the file
        named in the error."""
        if not isinstance(raw, dict) or "net" not in raw:
            raise CheckpointError(
                f"{source}: not a luong_lit checkpoint (no model description inside)"
            )
        version = _version(raw, source)
        missing = [k for k in _REQUIRED[version] if k not in raw]
        if missing:
            raise CheckpointError(
                f"{source}: damaged model description (version {version}): no "
                f"{', '.join(missing)} inside"
            )
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(str(k) for k in raw if k not in names) if version > 1 else []
        if unknown:
            raise CheckpointError(
                f"{source}: damaged model description (version {version}): unknown field "
                f"{', '.join(unknown)}"
            )
        fields = {k: _checked(k, raw[k], source) for k in names if k in raw and k != "version"}
        return cls(**fields, version=version)

    @classmethod
    def of(cls, checkpoint: Any, source: Source = "checkpoint") -> CheckpointMeta:
        """The description inside a loaded checkpoint (the whole dict ``torch.load`` gave)."""
        raw = checkpoint.get(KEY) if isinstance(checkpoint, dict) else None
        return cls.from_dict(raw, source)

    def replace(self, **changes: Any) -> CheckpointMeta:
        """A copy with ``changes`` (:func:`dataclasses.replace`)."""
        return dataclasses.replace(self, **changes)


def _version(raw: dict[Any, Any], source: Source) -> int:
    version = raw.get("version", 1)
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise CheckpointError(f"{source}: damaged model description (version {version!r})")
    if version > VERSION:
        raise CheckpointError(
            f"{source}: its model description is version {version}, newer than this luong_lit "
            f"reads (1 to {VERSION}): load it with the luong_lit that wrote it, or a newer one"
        )
    return version


def _strings(value: Any) -> tuple[str, ...] | None:
    if isinstance(value, (list, tuple)) and all(isinstance(x, str) for x in value):
        return tuple(value)
    return None


def _mapping(value: Any, of: type | None = None) -> dict[str, Any] | None:
    if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
        return None
    if of is not None and not all(isinstance(v, of) for v in value.values()):
        return None
    return dict(value)


def _group(read: Callable[[dict[str, Any]], Any]) -> Callable[[Any], Any]:
    """How a stored group becomes its field: a dict of string keys, read by ``read``."""
    return lambda value: None if (stored := _mapping(value)) is None else read(stored)


#: each field: how its stored value becomes the field's (None: the wrong type), and in words
_FIELDS: dict[str, tuple[Callable[[Any], Any], str]] = {
    "net": (_group(net_options), "a dict"),
    "src_vocab": (_strings, "a list of strings"),
    "tgt_vocab": (_strings, "a list of strings"),
    "data": (_group(data_options), "a dict"),
    "overrides": (_strings, "a list of strings"),
    "preprocess": (_group(preprocessing), "a dict"),
    "recaser": (lambda v: _mapping(v, str), "a dict of strings"),
    "sentencepiece": (lambda v: _mapping(v, bytes), "a dict of bytes"),
    "averaged_from": (_strings, "a list of strings"),
    "parts": (lambda v: _mapping(v, str), "a dict of strings"),
}
_OPTIONAL = ("preprocess", "recaser", "sentencepiece", "averaged_from", "parts")


def _checked(name: str, value: Any, source: Source) -> Any:
    """The field ``name``'s value, or a :class:`CheckpointError` naming ``source``."""
    if value is None and name in _OPTIONAL:
        return None
    if name == "data" and value is None:  # an older checkpoint without a data description
        return data_options({})
    convert, expected = _FIELDS[name]
    try:
        out = convert(value)
    except CheckpointError as err:  # a value inside a group
        raise CheckpointError(f"{source}: damaged model description: {err}") from None
    if out is None:
        raise CheckpointError(
            f"{source}: damaged model description: {name} should be {expected}, "
            f"got {type(value).__name__}"
        )
    return out
