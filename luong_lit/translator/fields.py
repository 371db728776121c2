"""Options declared once, as fields of a frozen record, and read from there by every door: the
command line's flags (:func:`add_flags`, as fairseq makes its options from dataclasses), the
server's request keys (:func:`request_fields`) and the Python API's keywords (the record's own
fields, :func:`luong_lit.validate.takes_options`).

A field made by :func:`option` carries its help, its flag's other names and whether a request
may ask for it; its flag's type follows its annotation (``bool``: a switch).
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any

#: a flag's type by the first type its field's annotation names (``None`` apart)
TYPES = {"int": int, "float": float, "str": str}


def option(default: Any, help: str, *, group: str = "search", aliases: tuple[str, ...] = (),
           request: bool = False, count: bool = False, choices: tuple[str, ...] | None = None,
           flag: str | None = None, bare: str | None = None,
           implies: str | None = None) -> Any:  # fmt: skip
    """A record's field with its ``help``, the ``group`` of flags it is in (a command adds
    the groups it takes), its flag's other names (``aliases``), whether a server's request may
    ask for it and whether it is a count (a request bounds it by the server's ``--max-beam``).
    For its flag: the values it takes (``choices``), its name where it is not the field's
    (``flag``: ``--dict``), the value it has given without one (``bare``: ``--int8`` is
    ``--int8 output``) and the switch it sets too (``implies``: ``--dict`` sets
    ``--replace-unk``)."""
    meta = {"help": help, "group": group, "aliases": aliases, "request": request, "count": count,
            "choices": choices, "flag": flag, "bare": bare, "implies": implies}  # fmt: skip
    return dataclasses.field(default=default, metadata=meta)


def declared(record: type) -> list[dataclasses.Field[Any]]:
    """The fields of ``record`` made by :func:`option`, in order."""
    return [f for f in dataclasses.fields(record) if "help" in f.metadata]


def flag_type(field: dataclasses.Field[Any]) -> type:
    """What a field's flag parses its value as: ``bool`` (a switch), ``int``, ``float`` or
    ``str`` (a field that takes a string among other types; the record parses it)."""
    kinds = [k.strip() for k in str(field.type).split("|")]
    if kinds[0] == "bool":
        return bool
    if "str" in kinds:
        return str
    for kind in kinds:
        if kind in TYPES:
            return TYPES[kind]
    raise TypeError(f"option {field.name}: no flag type for {field.type}")


class _Implies(argparse.Action):
    """A flag that sets its value and a switch its field names (``implies``)."""

    def __init__(self, *args: Any, implies: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.implies = implies

    def __call__(self, parser: Any, namespace: Any, values: Any, option: Any = None) -> None:
        setattr(namespace, self.dest, values)
        setattr(namespace, self.implies, True)


def _flag_kwargs(f: dataclasses.Field[Any], default: Any) -> dict[str, Any]:
    """How ``argparse`` reads a field's flag: a switch, or a value of its type (among its
    ``choices``; optional where it has a ``bare`` value; setting another switch too)."""
    kind, meta = flag_type(f), f.metadata
    if kind is bool:
        return {"action": "store_true"}
    out: dict[str, Any] = {"type": kind, "default": default}
    if meta.get("choices"):
        out["choices"] = meta["choices"]
    if meta.get("bare") is not None:
        out.update(nargs="?", const=meta["bare"])
    if meta.get("implies"):
        out.update(action=_Implies, implies=meta["implies"])
    return out


def add_flags(
    ap: argparse.ArgumentParser | Any, record: type, group: str,
    helps: dict[str, str] | None = None, defaults: dict[str, Any] | None = None,
    only: tuple[str, ...] | None = None,
) -> None:  # fmt: skip
    """One flag per declared field of ``record`` in ``group`` (``n_best`` → ``--n-best``), or
    of those of its fields named in ``only``; ``helps`` and ``defaults``: a command's own words
    and defaults for a field."""
    for f in declared(record):
        if f.metadata["group"] != group or (only is not None and f.name not in only):
            continue
        names = [f.metadata.get("flag") or f"--{f.name.replace('_', '-')}", *f.metadata["aliases"]]
        help_ = (helps or {}).get(f.name, f.metadata["help"])
        default = (defaults or {}).get(f.name, f.default)
        ap.add_argument(*names, dest=f.name, help=help_, **_flag_kwargs(f, default))


def request_fields(record: type) -> list[dataclasses.Field[Any]]:
    """The fields a server's request may ask for, in order."""
    return [f for f in declared(record) if f.metadata["request"]]
