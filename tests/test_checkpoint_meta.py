"""A checkpoint's description (:mod:`luong_lit.checkpoint.meta`): one typed, versioned schema that
round-trips as plain data, refuses what it cannot read by the file's name, and still reads the
checkpoints written before it had a version."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from conftest import compose_cfg, tiny_overrides

import luong_lit
from luong_lit.checkpoint import (
    CheckpointError,
    CheckpointMeta,
    average_checkpoints,
    check_resumable,
    read_meta,
)
from luong_lit.checkpoint.groups import data_options, net_options
from luong_lit.checkpoint.meta import KEY, VERSION
from luong_lit.data.text.preprocess import Preprocessing
from luong_lit.data.vocab import SPECIALS
from luong_lit.errors import ConfigError

#: a toy model saved by the kit before its description had a version (embed and hidden size 8,
#: the lowercase recipe with a recaser), and what it translated then
V1 = Path(__file__).parent / "data" / "checkpoint_v1.ckpt"
V1_GREEDY = {"a b c d": "B B J E", "J B E B": "E E E E", "h h g d b h": "B B B B F J"}
V1_BEAM_3 = {"a b c d": "B B J E", "g g j": "D I J"}


def meta(**changes) -> CheckpointMeta:
    full = CheckpointMeta(
        net=net_options(
            {"_target_": "luong_lit.nn.Seq2Seq", "embed_size": 8, "attention": {"name": "global"}}
        ),
        src_vocab=(*SPECIALS, "a", "b"),
        tgt_vocab=(*SPECIALS, "A"),
        data=data_options({"dataset": "files", "tokenizer": "none", "test": {}}),
        overrides=("data=files", "trainer.max_epochs=3"),
        preprocess=Preprocessing(lowercase=True, moses=True),
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
        full.net = net_options({})  # frozen


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
    assert old.version == 1 and old.recaser == {"b": "B"} and old.preprocess.lowercase
    assert old.net.sizes.hidden_size == 8 and old.src_vocab[:4] == SPECIALS
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
        check_resumable(V1, cfg.model.net, str(V1))
    assert "data.recase_from=toy/cased.tgt" in str(err.value)  # its own overrides, to resume it


def test_the_fixture_stays_small():
    assert V1.stat().st_size < 200_000


def test_a_version_2_checkpoint_saved_by_training_loads_and_is_written_back_as_it_was(
    toy_corpus, tmp_path
):
    """The groups are stored as the resolved configs (version 2's format), read into their
    option dataclasses, and written back with the same keys, in the same order."""
    from omegaconf import OmegaConf

    from luong_lit.training.run import train

    recipe = ["data.preprocess={lowercase:true,moses:true}", "data.src_lang=en", "data.tgt_lang=de"]
    cfg = compose_cfg([*tiny_overrides(toy_corpus), *recipe, "model.net.src_eos=true",
                       "trainer.max_epochs=1", "test_after_training=false"], tmp_path)  # fmt: skip
    train(cfg)
    path = tmp_path / "checkpoints" / "best.ckpt"
    stored = torch.load(path, weights_only=True)[KEY]
    assert stored["version"] == 2
    assert stored["data"] == OmegaConf.to_container(cfg.data, resolve=True)
    assert stored["net"] == OmegaConf.to_container(cfg.model.net, resolve=True)
    assert stored["preprocess"] == Preprocessing(lowercase=True, moses=True).to_dict()
    read = read_meta(path)
    again = read.to_dict()
    assert again == stored and list(again) == list(stored)
    assert all(list(again[g]) == list(stored[g]) for g in ("net", "data", "preprocess"))
    assert read.data.corpus.train == OmegaConf.to_container(cfg.data.train)
    assert (read.data.batching.batch_size, read.data.tokenisation.tokenizer) == (8, "none")
    assert read.net.sizes.hidden_size == 8 and read.net.architecture.src_eos is True
    assert read.preprocess == Preprocessing(lowercase=True, moses=True)
    model = luong_lit.load(path)
    assert model.meta == read and len(model.translate(["a b c"])[0]) > 0


def test_a_description_lacking_a_key_takes_the_default_it_always_had(tmp_path):
    """What the readers restated before (``data.get("tgt_lang", "de")``, ...) is the options'
    default now; a key the description lacks is not written back."""
    from luong_lit.data.loading.model_data import model_recipe, test_set_names

    ckpt = torch.load(V1, weights_only=True)
    lacking = ("src_lang", "tgt_lang", "tokenizer", "tokenizer_opts", "test")
    data = {k: v for k, v in ckpt[KEY]["data"].items() if k not in lacking}
    net = {k: v for k, v in ckpt[KEY]["net"].items() if k not in ("bias", "dropout")}
    ckpt[KEY] = {**ckpt[KEY], "data": data, "net": net}
    torch.save(ckpt, tmp_path / "lacking.ckpt")
    old = read_meta(tmp_path / "lacking.ckpt")
    corpus, tok = old.data.corpus, old.data.tokenisation
    assert (corpus.src_lang, corpus.tgt_lang, corpus.test) == ("en", "de", {})
    assert old.data.direction == (None, None)  # align --rwth: a direction not stated, refused
    assert (tok.tokenizer, tok.tokenizer_opts, tok.lowercase) == ("none", {}, False)
    assert old.net.architecture.bias is True and old.net.regularisation.dropout == 0.0
    assert old.to_dict()["data"] == data and old.to_dict()["net"] == net
    assert test_set_names(old) == []
    assert luong_lit.load(tmp_path / "lacking.ckpt").translate(list(V1_GREEDY)) == list(
        V1_GREEDY.values()
    )
    # no recipe kept and no corpus named: raw text, as before (not the default corpus's recipe)
    bare = CheckpointMeta.from_dict({"net": {}, "src_vocab": [], "tgt_vocab": []})
    assert bare.data == data_options({}) and model_recipe(bare).identity
    assert model_recipe(bare.replace(data=data_options({"dataset": "multi30k"}))).identity
    partial = {**meta().to_dict(), "preprocess": {"lowercase": True}}  # a step it lacks: not taken
    assert CheckpointMeta.from_dict(partial).preprocess == Preprocessing(lowercase=True)


def test_keys_no_option_has_are_kept_and_corpora_are_not_checked_again(tmp_path):
    """A group's unknown keys load, are written back and refused only where the network or the
    datamodule is made from them, as before; a corpus not registered here still loads."""
    from luong_lit.data.loading.model_data import datamodule_for

    stored = meta().to_dict()
    stored["net"] = {**stored["net"], "_partial_": True, "impl": "fast"}
    stored["data"] = {**stored["data"], "dataset": "not_registered", "colour": "blue"}
    read = CheckpointMeta.from_dict(stored)
    assert read.to_dict() == stored and read.data.corpus.dataset == "not_registered"
    assert read.net.sizes.embed_size == 8 and read.net.config["impl"] == "fast"
    with pytest.raises(CheckpointError, match="data description is damaged.*colour"):
        datamodule_for(read.replace(data=data_options({**stored["data"], "dataset": "files"})))
    damaged = {
        r"data\.test should be a dict, got str": {**stored, "data": {"test": "newstest"}},
        r"preprocess: unknown step\(s\) \['lower'\]": {**stored, "preprocess": {"lower": True}},
        "net should be a dict, got list": {**stored, "net": [1]},
    }
    for message, raw in damaged.items():
        with pytest.raises(CheckpointError, match=rf"^run/x\.ckpt: damaged .*{message}"):
            CheckpointMeta.from_dict(raw, Path("run/x.ckpt"))
