"""The search's options are declared once, as :class:`SearchOptions`' fields: the command
line's flags, the server's request keys and the API's keywords are made from them, so that a
new option is one field in one file."""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import subprocess
import sys

import pytest
from conftest import REPO, run_env

from luong_lit.translator import SearchOptions
from luong_lit.translator.fields import add_flags, declared, option, request_fields


def help_of(command: str) -> str:
    res = subprocess.run([sys.executable, "-m", "luong_lit", command, "--help"], cwd=REPO,
                         env=run_env(), capture_output=True, text=True)  # fmt: skip
    assert res.returncode == 0, res.stderr[-2000:]
    return " ".join(res.stdout.split())  # argparse's wrapped lines as one


def test_each_field_is_a_flag_of_translate_and_serve_and_a_keyword_of_the_api():
    import luong_lit

    names = [f.name for f in dataclasses.fields(SearchOptions)]
    assert names == [f.name for f in declared(SearchOptions)]  # every field declares its flag
    for command in ("translate", "serve"):
        said = help_of(command)
        for f in declared(SearchOptions):
            flag = "--" + f.name.replace("_", "-")
            assert f" {flag}" in said, (command, flag)
            words = " ".join(f.metadata["help"].split()[:4])
            assert f.name == "n_best" or words in said, (command, flag, words)
    assert set(names) <= set(inspect.signature(luong_lit.load).parameters)  # its keywords


def test_each_load_option_is_declared_once_and_is_a_flag_of_the_commands_that_load():
    from luong_lit.translator import LoadOptions

    names = [f.name for f in dataclasses.fields(LoadOptions)]
    assert names == [f.name for f in declared(LoadOptions)]
    takes = {"translate": ("load", "input"), "serve": ("load", "input"), "evaluate": ("load",)}
    for command, groups in takes.items():
        said = help_of(command)
        for f in declared(LoadOptions):
            flag = f.metadata["flag"] or "--" + f.name.replace("_", "-")
            assert (f" {flag}" in said) == (f.metadata["group"] in groups), (command, flag)
    scored = help_of("score")  # score reads given text: some of the load options, its words
    for flag in ("--engine", "--device", "--combine", "--batch-size", "--pretokenized"):
        assert f" {flag}" in scored, flag
    assert not [f for f in (" --int8", " --dict", " --workers", " --overlong") if f in scored]
    assert "sentences scored together" in scored
    assert "overlong (default: 100)" in help_of("serve") and "(unset: no limit)" in help_of(
        "translate"
    )  # each command's own longest source
    from luong_lit.cli import add_decoding_args, load_options, search_options

    ap = argparse.ArgumentParser()
    add_decoding_args(ap)
    args = ap.parse_args(["c.ckpt", "--int8", "--dict", "d.txt", "--combine", "probs"])
    assert load_options(args) == LoadOptions(int8="output", dictionary="d.txt", combine="probs")
    assert search_options(args).replace_unk  # a dictionary is there to replace unknown words
    argv = ["translate", "x.ckpt", "--int8", "--dict", "d.txt", "--overlong", "cut"]
    res = subprocess.run([sys.executable, "-m", "luong_lit", *argv], cwd=REPO, env=run_env(),
                         capture_output=True, text=True)  # fmt: skip
    assert res.returncode == 2 and "--overlong: invalid choice: 'cut'" in res.stderr


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


def test_options_resolve_to_one_of_two_frozen_search_records():
    """Beam search and sampling are two records: each holds only what it uses, neither can be
    changed once made, and the options resolve to the one asked for (the API, the server and
    the training callbacks decode through the same resolution)."""
    from luong_lit.decoding.search import AUTHORS, BeamSearch, Sampling

    beam = SearchOptions(beam=3, n_best=2, length_penalty="avg", max_len_ratio=2.0).search()
    assert beam == BeamSearch(beam=3, n_best=2, length_penalty="avg", max_len_ratio=2.0)
    drawn = SearchOptions(sampling=True, n_best=2, top_k=4, seed=7).search()
    assert drawn == Sampling(n_best=2, top_k=4, seed=7) and not hasattr(drawn, "beam")
    assert not {"top_k", "top_p", "temperature", "seed"} & {
        f.name for f in dataclasses.fields(BeamSearch)
    }
    assert SearchOptions(authors_decoder=True).search() == AUTHORS
    with pytest.raises(dataclasses.FrozenInstanceError):
        beam.beam = 4  # type: ignore[misc]
    with pytest.raises(TypeError):
        BeamSearch(top_k=3)  # type: ignore[call-arg]  # a beam search draws nothing
