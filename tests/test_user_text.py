"""Raw text in, natural text out: each named corpus's preprocessing redone on raw text, the
recaser, and ``translate`` on raw input equal to its pre-tokenised path, recased."""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from conftest import SHARED_DATA

from luong_lit.data.text.preprocess import RECIPES, Preprocessing, recipe_for
from luong_lit.data.text.recase import Recaser
from luong_lit.errors import ConfigError

REPO = Path(__file__).resolve().parents[1]


def lines(path: Path) -> list[str]:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return fh.read().splitlines()


@pytest.mark.skipif(not SHARED_DATA.is_dir(), reason="needs the local data mirror")
@pytest.mark.parametrize("split", ["val", "test_2016_flickr"])
@pytest.mark.parametrize("lang", ["en", "de"])
def test_multi30k_raw_text_made_as_the_release_was(split, lang):
    recipe = recipe_for({"dataset": "multi30k", "variant": "tok"})
    raw = lines(SHARED_DATA / "multi30k" / "raw" / f"{split}.{lang}.gz")
    tok = lines(SHARED_DATA / "multi30k" / "tok" / f"{split}.lc.norm.tok.{lang}.gz")
    same = sum(recipe.apply(r, lang) == t.split() for r, t in zip(raw, tok))
    assert same >= len(raw) - 2  # the German normaliser places 1 closing quote differently
    back = sum(
        recipe.undo(recipe.apply(r, lang), lang) == _normalised(r.lower(), lang) for r in raw
    )
    assert back >= 0.99 * len(raw)  # and back: the raw line, lowercased (Moses's "4 '" aside)


def _normalised(text: str, lang: str) -> str:
    from sacremoses import MosesPunctNormalizer

    return MosesPunctNormalizer(lang).normalize(text)


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


def translate(ckpt: Path, text: str, *args: str) -> list[str]:
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    res = subprocess.run(
        [sys.executable, "-m", "luong_lit", "translate", str(ckpt), "--quiet", *args],
        input=text,
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=120,
    )
    assert res.returncode == 0, res.stderr
    return res.stdout.splitlines()


def test_the_checkpoint_keeps_its_recipe_and_recaser(lowercase_model):
    extra = torch.load(lowercase_model, weights_only=True)["luong_lit"]
    assert extra["preprocess"]["lowercase"] and extra["preprocess"]["moses"]
    assert extra["recaser"] == {"b": "B"}


def test_raw_input_translates_as_its_pretokenised_form_then_recased(lowercase_model):
    raw = ["A B C D.", "E, F G!", "H I J"]
    pre = [" ".join(Preprocessing(lowercase=True, moses=True).apply(x, "en")) for x in raw]
    plain = translate(lowercase_model, "\n".join(pre) + "\n", "--pretokenized")
    natural = translate(lowercase_model, "\n".join(raw) + "\n")
    recaser = Recaser({"b": "B"})
    from luong_lit.data.text.tokenize import MosesTokenizer

    detok = MosesTokenizer("de")
    want = [detok.detokenize(recaser(p.split())) if p else "" for p in plain]
    assert natural == want
    assert all(" b " not in f" {line} " for line in natural)  # recased


def test_raw_text_benchmark_rebuilds_the_kits_output_from_tokens(lowercase_model, tmp_path):
    """The benchmark's "kit" recasing of ``--pretokenized`` output equals ``translate``'s own."""
    import json

    (tmp_path / "src.en").write_text("A B C.\nD, E F!\nG H\n", encoding="utf-8")
    (tmp_path / "ref.de").write_text("X B c.\nY B d!\nZ b\n", encoding="utf-8")
    cmd = [sys.executable, "-m", "studies.raw_text", str(lowercase_model), "--beam", "2"]
    cmd += ["--out", str(tmp_path / "out"), "--src", str(tmp_path / "src.en")]
    cmd += ["--ref", str(tmp_path / "ref.de")]
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    res = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, env=env)
    assert res.returncode == 0, res.stderr
    rows = [json.loads(x) for x in res.stdout.splitlines()]
    assert rows[0]["identical_lines"] == 3
    names = [r["recasing"] for r in rows[1:]]
    assert names[0].startswith("none") and names[-1].endswith("(the kit)")
    assert len({r["lowercased"] for r in rows[1:]}) == 1  # recasing changes case only


def line_reader(proc):
    """Lines of the process's output, handed over by a thread as they arrive."""
    import queue
    import threading

    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [lines.put(x) for x in proc.stdout], daemon=True).start()
    return lines


def read_line(lines, timeout: float = 60.0) -> str:
    import queue

    try:
        return lines.get(timeout=timeout).rstrip("\n")
    except queue.Empty:
        raise AssertionError("no answer within the time limit") from None


def test_interactive_mode_answers_each_line_before_the_next_is_written(lowercase_model):
    batch = translate(lowercase_model, "A B C\nD E F\n", "--beam", "2")
    proc = subprocess.Popen(
        [sys.executable, "-m", "luong_lit", "translate", str(lowercase_model), "--beam", "2"]
        + ["--interactive", "--show-attention", "--quiet"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )
    lines = line_reader(proc)
    try:
        answers = []
        for line in ("A B C", "D E F"):
            proc.stdin.write(line + "\n")
            proc.stdin.flush()  # the next line is written only after this one's answer
            answers.append((read_line(lines), read_line(lines)))
        proc.stdin.write("\n")
        proc.stdin.close()
        assert proc.wait(60) == 0, proc.stderr.read()
    finally:
        proc.kill()
    assert [a for a, _ in answers] == batch
    for (_, attention), source in zip(answers, ("A B C", "D E F")):
        pairs = [p.split("→") for p in attention.split()]
        assert pairs and all(src in source.split() for _, src in pairs)  # the words as typed


def test_gold_tokens_are_read_as_the_models_corpus_writes_them(lowercase_model, tmp_path):
    """A lowercased model aligns cased gold text token for token, lowercased (and escaped)."""
    import json

    assert Preprocessing(lowercase=True, escape=True).token("It's") == "it&apos;s"
    assert Preprocessing().token("It's") == "It's"
    (tmp_path / "g.src").write_text("A B C\nD E\n", encoding="utf-8")
    (tmp_path / "g.tgt").write_text("A B C\nD E\n", encoding="utf-8")
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "luong_lit", "align", str(lowercase_model), "--out", str(out)]
    cmd += ["--src", str(tmp_path / "g.src"), "--tgt", str(tmp_path / "g.tgt")]
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    res = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, env=env)
    assert res.returncode == 0, res.stderr
    assert json.loads((out / "align.json").read_text())["unk_token_share"] == 0.0
