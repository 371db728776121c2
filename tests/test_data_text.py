"""``luong_lit.data.text``: tokenisers, the corpora's recipes redone on raw text, the recaser, what
a checkpoint keeps of them, and word dictionaries."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest
from conftest import DATA_MIRROR, needs_mirror

from luong_lit.data.io import DataError
from luong_lit.data.text.dictionary import dictionary_from_links, load_dictionary, parse_links
from luong_lit.data.text.preprocess import RECIPES, Preprocessing, recipe_for
from luong_lit.data.text.recase import Recaser
from luong_lit.data.text.tokenize import make_tokenizer
from luong_lit.errors import ConfigError


def lines(path: Path) -> list[str]:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return fh.read().splitlines()


def _normalised(text: str, lang: str) -> str:
    from sacremoses import MosesPunctNormalizer

    return MosesPunctNormalizer(lang).normalize(text)


def test_sentencepiece_trained_and_cached(tmp_path):
    lines = [f"the cat number {i} sat on the mat" for i in range(200)]
    a = make_tokenizer("sentencepiece", "en", lines, tmp_path, model_type="bpe", vocab_size=60)
    b = make_tokenizer("sentencepiece", "en", lines, tmp_path, model_type="unigram", vocab_size=60)
    assert a.model_path.is_file() and b.model_path.is_file() and a.model_path != b.model_path
    mtime = a.model_path.stat().st_mtime_ns
    again = make_tokenizer("sentencepiece", "en", lines, tmp_path, model_type="bpe", vocab_size=60)
    assert again.model_path.stat().st_mtime_ns == mtime  # reused from the cache
    assert "".join(a.tokenize("the cat sat")).replace("▁", " ").strip() == "the cat sat"


@needs_mirror
@pytest.mark.parametrize("split", ["val", "test_2016_flickr"])
@pytest.mark.parametrize("lang", ["en", "de"])
def test_multi30k_raw_text_made_as_the_release_was(split, lang):
    recipe = recipe_for({"dataset": "multi30k", "variant": "tok"})
    raw = lines(DATA_MIRROR / "multi30k" / "raw" / f"{split}.{lang}.gz")
    tok = lines(DATA_MIRROR / "multi30k" / "tok" / f"{split}.lc.norm.tok.{lang}.gz")
    same = sum(recipe.apply(r, lang) == t.split() for r, t in zip(raw, tok))
    assert same >= len(raw) - 2  # the German normaliser places 1 closing quote differently
    back = sum(
        recipe.undo(recipe.apply(r, lang), lang) == _normalised(r.lower(), lang) for r in raw
    )
    assert back >= 0.99 * len(raw)  # and back: the raw line, lowercased (Moses's "4 '" aside)


def test_iwslt14_recipe_tokenises_before_lowercasing_as_its_release():
    recipe = recipe_for({"dataset": "iwslt14_deen", "variant": "tok"})
    raw = 'It\'s about two weeks old. There they are, "folks".'
    assert " ".join(recipe.apply(raw, "en")) == (
        "it &apos;s about two weeks old . there they are , &quot; folks &quot; ."
    )
    assert recipe.undo(recipe.apply(raw, "en"), "en") == raw.lower()


def test_every_tokenised_named_corpus_has_a_recipe_and_files_take_one():
    assert set(RECIPES) == {("multi30k", "tok"), ("iwslt14_deen", "tok")}
    assert recipe_for({"dataset": "multi30k", "variant": "raw"}).identity
    mine = recipe_for({"dataset": "files", "preprocess": {"moses": True, "lowercase": True}})
    assert mine == Preprocessing(lowercase=True, moses=True)
    with pytest.raises(ConfigError, match=r"data.preprocess: unknown step\(s\) \['lower'\]"):
        recipe_for({"dataset": "files", "preprocess": {"lower": True}})


def test_recaser_takes_the_usual_form_and_copies_the_source_casing():
    recaser = Recaser.learn(
        [
            ["Ein", "Mann", "fährt", "nach", "Berlin", "."],
            ["Der", "Mann", "und", "ein", "Hund", "."],
            ["Zwei", "Hunde", "und", "ein", "Mann", "."],
        ]
    )
    assert recaser.forms == {"mann": "Mann", "berlin": "Berlin", "hund": "Hund", "hunde": "Hunde"}
    out = recaser(
        ["ein", "mann", "trifft", "obama", "in", "berlin", "."], ["Then", "Obama", "meets"]
    )
    assert out == ["Ein", "Mann", "trifft", "Obama", "in", "Berlin", "."]
    assert recaser(['"', "ein", "hund"]) == ['"', "Ein", "Hund"]
    # the source's first word is capitalised by position only: it lends no casing
    out = recaser(["der", "mann", "in", "obama"], ['"', "In", "the", "Obama"])
    assert out == ["Der", "Mann", "in", "Obama"]


def test_the_checkpoint_keeps_its_recipe_and_recaser(lowercase_model):
    from luong_lit.checkpoint import read_meta

    meta = read_meta(lowercase_model)
    assert meta.preprocess.lowercase and meta.preprocess.moses
    assert meta.recaser == {"b": "B"}


# ------------------------------------------------------------------ dictionaries
def test_dictionary_file_formats_and_errors(tmp_path):
    probs = tmp_path / "p.txt"
    probs.write_text("house Haus 0.2\nhouse Gebäude 0.7\ncat Katze 1.0\n", encoding="utf-8")
    assert load_dictionary(probs) == {"house": "Gebäude", "cat": "Katze"}
    muse = tmp_path / "muse.txt.gz"
    with gzip.open(muse, "wt", encoding="utf-8") as fh:
        fh.write("the die\nthe der\ncat katze\n")
    assert load_dictionary(muse) == {"the": "die", "cat": "katze"}
    bad = tmp_path / "bad.txt"
    bad.write_text("house Haus\nlonely\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"bad\.txt:2: expected"):
        load_dictionary(bad)
    bad.write_text("house Haus often\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"bad\.txt:1: the probability 'often'"):
        load_dictionary(bad)


def test_dictionary_from_links_keeps_frequent_pairs():
    src = [["the", "house"]] * 3 + [["a", "house"]]
    tgt = [["das", "haus"]] * 3 + [["ein", "gebäude"]]
    links = [parse_links("0-0 1-1")] * 4
    d = dictionary_from_links(src, tgt, links, min_count=2)
    assert d == {"the": "das", "house": "haus"}  # 'a'-'ein' and 'house'-'gebäude' seen once
    with pytest.raises(DataError, match="'0:1'"):
        parse_links("0:1", "x")
