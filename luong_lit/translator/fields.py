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
           request: bool = False, count: bool = False) -> Any:  # fmt: skip
    """A record's field with its ``help``, the ``group`` of flags it is in (a command adds
    the groups it takes), its flag's other names (``aliases``), whether a server's request may
    ask for it and whether it is a count (a request bounds it by the server's ``--max-beam``)."""
    meta = {"help": help, "group": group, "aliases": aliases, "request": request, "count": count}
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


def add_flags(
    ap: argparse.ArgumentParser | Any, record: type, group: str,
    helps: dict[str, str] | None = None,
) -> None:  # fmt: skip
    """One flag per declared field of ``record`` in ``group`` (``n_best`` → ``--n-best``);
    ``helps``: a command's own words for a field."""
    for f in declared(record):
        if f.metadata["group"] != group:
            continue
        names = [f"--{f.name.replace('_', '-')}", *f.metadata["aliases"]]
        help_ = (helps or {}).get(f.name, f.metadata["help"])
        kind = flag_type(f)
        if kind is bool:
            ap.add_argument(*names, dest=f.name, action="store_true", help=help_)
        else:
            ap.add_argument(*names, dest=f.name, type=kind, default=f.default, help=help_)


def request_fields(record: type) -> list[dataclasses.Field[Any]]:
    """The fields a server's request may ask for, in order."""
    return [f for f in declared(record) if f.metadata["request"]]
