"""The search's options are declared once, as :class:`SearchOptions`' fields: the command
line's flags, the server's request keys and the API's keywords are made from them, so that a
new option is one field in one file."""

from __future__ import annotations

import argparse
import dataclasses
import inspect

import pytest

from luong_lit.translator import SearchOptions
from luong_lit.translator.fields import add_flags, declared, option, request_fields


def flags_of(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    return {a.dest: a for a in parser._actions}


def test_each_field_is_a_flag_of_translate_and_serve_and_a_keyword_of_the_api():
    import luong_lit
    from luong_lit.commands.serve import parser as serve_parser
    from luong_lit.commands.translate import parser as translate_parser

    names = [f.name for f in dataclasses.fields(SearchOptions)]
    assert names == [f.name for f in declared(SearchOptions)]  # every field declares its flag
    for make in (translate_parser, serve_parser):
        have = flags_of(make())
        for f in declared(SearchOptions):
            assert have[f.name].option_strings[0] == "--" + f.name.replace("_", "-")
            assert have[f.name].default == f.default and have[f.name].help
    assert set(names) <= set(inspect.signature(luong_lit.load).parameters)  # its keywords


def test_a_request_may_ask_for_each_field_marked_so_and_no_other():
    from luong_lit.serving.requests import KEYS, Limits, settings

    asked = [f.name for f in request_fields(SearchOptions)]
    assert set(asked) < set(KEYS) and "authors_decoder" not in KEYS
    s = settings({"text": "a", "beam": 3, "top_k": 2, "sampling": True}, ["m"], Limits())
    assert s.get("beam") == 3 and s.get("top_k") == 2 and s.get("n_best") is None


def test_a_new_field_is_a_flag_with_its_type_help_and_aliases():
    @dataclasses.dataclass(frozen=True)
    class Record:
        width: int = option(4, "how wide", aliases=("--wide",))
        ratio: float | None = option(None, "a ratio")
        penalty: float | str | None = option(None, "a number or a name")
        on: bool = option(False, "a switch")
        drawn: int = option(0, "sampling's", group="sampling")

    ap = argparse.ArgumentParser()
    add_flags(ap, Record, "search")
    args = ap.parse_args(["--wide", "7", "--ratio", "0.5", "--penalty", "avg", "--on"])
    assert (args.width, args.ratio, args.penalty, args.on) == (7, 0.5, "avg", True)
    assert not hasattr(args, "drawn")  # another group's
    with pytest.raises(SystemExit):
        ap.parse_args(["--width", "x"])
