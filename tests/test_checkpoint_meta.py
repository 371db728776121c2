"""A checkpoint's description (:mod:`luong_lit.checkpoint.meta`): one typed, versioned schema that
round-trips as plain data, refuses what it cannot read by the file's name, and still reads the
checkpoints written before it had a version."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from conftest import compose_cfg

import luong_lit
from luong_lit.checkpoint import (
    CheckpointError,
    CheckpointMeta,
    average_checkpoints,
    check_resumable,
    read_meta,
)
from luong_lit.checkpoint.meta import KEY, VERSION
from luong_lit.data.vocab import SPECIALS
from luong_lit.errors import ConfigError

#: a toy model saved by the kit before its description had a version (embed and hidden size 8,
#: the lowercase recipe with a recaser), and what it translated then
V1 = Path(__file__).parent / "data" / "checkpoint_v1.ckpt"
V1_GREEDY = {"a b c d": "B B J E", "J B E B": "E E E E", "h h g d b h": "B B B B F J"}
V1_BEAM_3 = {"a b c d": "B B J E", "g g j": "D I J"}


def meta(**changes) -> CheckpointMeta:
    full = CheckpointMeta(
        net={"_target_": "luong_lit.nn.Seq2Seq", "embed_size": 8, "attention": {"name": "global"}},
        src_vocab=(*SPECIALS, "a", "b"),
        tgt_vocab=(*SPECIALS, "A"),
        data={"dataset": "files", "tokenizer": "none", "test": {}},
        overrides=("data=files", "trainer.max_epochs=3"),
        preprocess={"lowercase": True, "moses": True},
        recaser={"b": "B"},
        sentencepiece={"src": b"\x00\x01", "tgt": b"\x02"},
        averaged_from=("e1.ckpt", "e2.ckpt"),
    )
    return full.replace(**changes)


def test_the_description_round_trips_as_plain_data(tmp_path):
    full, bare = meta(), meta(preprocess=None, recaser=None, sentencepiece=None, averaged_from=None)
    for m in (full, bare):
        stored = m.to_dict()
        assert stored["version"] == VERSION == m.version == 2
        assert CheckpointMeta.from_dict(stored) == m
        torch.save({KEY: stored}, tmp_path / "m.ckpt")  # weights_only=True reads it back
        assert CheckpointMeta.of(torch.load(tmp_path / "m.ckpt", weights_only=True)) == m
    assert set(bare.to_dict()) == {"version", "net", "src_vocab", "tgt_vocab", "data", "overrides"}
    with pytest.raises(AttributeError):
        full.net = {}  # frozen


def test_a_newer_or_damaged_description_is_refused_by_the_files_name():
    good = meta().to_dict()

    def without(*keys: str) -> dict:
        return {k: v for k, v in good.items() if k not in keys}

    cases = {
        "version 3, newer than this luong_lit reads": {**good, "version": 3},
        r"damaged model description \(version 'two'\)": {**good, "version": "two"},
        "no data, overrides inside": without("data", "overrides"),
        "no tgt_vocab inside": without("tgt_vocab", "version"),  # version 1 without it
        "src_vocab should be a list of strings, got dict": {**good, "src_vocab": {"a": 1}},
        "tgt_vocab should be a list of strings, got list": {**good, "tgt_vocab": [1, 2]},
        "recaser should be a dict of strings, got dict": {**good, "recaser": {"b": 2}},
        "sentencepiece should be a dict of bytes": {**good, "sentencepiece": {"src": "text"}},
        "unknown field colour": {**good, "colour": "blue"},
        r"not a luong_lit checkpoint \(no model description inside\)": {"weights": 1},
    }
    for message, raw in cases.items():
        with pytest.raises(CheckpointError, match=rf"^run/x\.ckpt: .*{message}"):
            CheckpointMeta.from_dict(raw, Path("run/x.ckpt"))
    older = {**without("version"), "colour": "blue"}  # version 1: keys it did not know, unread
    assert CheckpointMeta.from_dict(older).version == 1


def test_a_damaged_description_in_a_file_is_one_line_naming_it(tmp_path):
    ckpt = torch.load(V1, weights_only=True)
    ckpt[KEY] = {**ckpt[KEY], "version": VERSION + 1}
    torch.save(ckpt, tmp_path / "newer.ckpt")
    with pytest.raises(CheckpointError, match=r"newer\.ckpt: its model description is version 3"):
        luong_lit.load(tmp_path / "newer.ckpt")


def test_a_checkpoint_from_before_the_versions_loads_and_translates_as_it_did(tmp_path):
    old = read_meta(V1)
    assert old.version == 1 and old.recaser == {"b": "B"} and old.preprocess["lowercase"]
    assert old.net["hidden_size"] == 8 and old.src_vocab[:4] == SPECIALS
    model = luong_lit.load(V1)
    assert model.meta == old
    assert model.translate(list(V1_GREEDY)) == list(V1_GREEDY.values())
    assert model.translate(list(V1_BEAM_3), beam=3) == list(V1_BEAM_3.values())
    again = average_checkpoints([V1], tmp_path / "v2.ckpt")  # written again: the current version
    assert read_meta(again) == old.replace(version=VERSION, averaged_from=("checkpoint_v1.ckpt",))
    assert luong_lit.load(again).translate(list(V1_GREEDY)) == list(V1_GREEDY.values())


def test_resuming_the_old_checkpoint_into_another_model_names_how_it_was_trained(tmp_path):
    cfg = compose_cfg(["attention=local_p"], tmp_path)
    with pytest.raises(ConfigError, match="was trained with .*attention=global") as err:
        check_resumable(cfg, str(V1))
    assert "data.recase_from=toy/cased.tgt" in str(err.value)  # its own overrides, to resume it


def test_the_fixture_stays_small():
    assert V1.stat().st_size < 200_000
