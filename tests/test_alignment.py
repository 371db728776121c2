"""``luong_lit.alignment``: gold text read in a model's tokens, the align command's links and AER,
ensembles read per member, eflomal."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

import pytest
from conftest import REPO, run_cli, run_here

from luong_lit.alignment.eflomal import eflomal_links
from luong_lit.data.text.dictionary import dictionary_from_links
from luong_lit.data.text.preprocess import Preprocessing

# ------------------------------------------------------------------ tiny runs


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


@pytest.mark.skipif(importlib.util.find_spec("eflomal") is None, reason="eflomal is not installed")
def test_eflomal_dictionary_on_a_toy_corpus():
    pairs = [
        ("the house", "das haus"),
        ("the cat", "die katze"),
        ("a house", "ein haus"),
        ("the dog", "der hund"),
        ("a cat", "eine katze"),
        ("a dog", "ein hund"),
    ]
    src = [s.split() for s, _ in pairs] * 20
    tgt = [t.split() for _, t in pairs] * 20
    d = dictionary_from_links(src, tgt, eflomal_links(src, tgt), min_count=10)
    assert d["house"] == "haus" and d["cat"] == "katze" and d["dog"] == "hund"


def test_align_reads_each_member_under_the_convention_given(runs, tmp_path):
    src, tgt, gold = tmp_path / "s.txt", tmp_path / "t.txt", tmp_path / "g.talp"
    src.write_text("a b c\nd e\n", encoding="utf-8")
    tgt.write_text("A B C\nD E\n", encoding="utf-8")
    gold.write_text("1-1 2-2 3-3\n1-1 2-2\n", encoding="utf-8")
    ckpts = [str(runs[a] / "checkpoints" / "best.ckpt") for a in ("global", "local_p")]
    files = ["--src", str(src), "--tgt", str(tgt), "--gold", str(gold), "--out", str(tmp_path)]
    res = run_here(["align", *ckpts, *files, "--member-conventions", "paper,predicted"])
    assert res.returncode == 0, res.stderr.decode()
    rep = json.loads((tmp_path / "align_ensemble.json").read_text())
    assert rep["convention"] == "per member: paper,predicted"
    assert rep["aer_by_convention"] == {rep["convention"]: rep["aer"]}
    one = run_here(["align", *ckpts, *files, "--member-conventions", "paper"])
    err = one.stderr.decode()
    assert one.returncode == 2
    assert "--member-conventions 'paper'" in err and "each of the 2 checkpoints" in err
    both = ["--member-conventions", "paper,paper", "--align-convention", "predicted"]
    res = run_here(["align", *ckpts, *files, *both])
    assert res.returncode == 2 and "not both" in res.stderr.decode()


def test_align_cli_writes_pharaoh_links_and_aer(runs, tmp_path):
    src, tgt, gold = tmp_path / "s.txt", tmp_path / "t.txt", tmp_path / "g.talp"
    src.write_text("a b c\nd e\n", encoding="utf-8")
    tgt.write_text("A B C\nD E\n", encoding="utf-8")
    gold.write_text("1-1 2-2 3-3\n1-1 2-2\n", encoding="utf-8")
    ckpt = runs["local_p"] / "checkpoints" / "best.ckpt"
    files = ["--src", str(src), "--tgt", str(tgt), "--gold", str(gold)]
    res = run_cli(["align", str(ckpt), *files, "--baselines", "--out", str(tmp_path)], stdin="")
    assert res.returncode == 0, res.stderr
    links = (tmp_path / "alignments.txt").read_text().splitlines()
    assert [len(x.split()) for x in links] == [3, 2]  # one link per target word
    rep = json.loads((tmp_path / "align.json").read_text())
    assert 0.0 <= rep["aer"] <= 1.0 and rep["baselines"]["diagonal"] == pytest.approx(0.0)
    assert rep["aer_by_convention"]["paper"] == rep["aer"]
    assert set(rep["aer_by_convention"]) == {"paper", "predicted"}
    assert [(r["bucket"], r["n"], r["diagonal"]) for r in rep["aer_by_length"]] == [
        ("1-10", 2, pytest.approx(0.0))
    ]
    assert rep["tail_share"]["gold"] == 0.0  # no sentence longer than six words
    assert rep["link_offsets"]["diagonal"]["+0"] == pytest.approx(1.0)
    assert sum(rep["link_offsets"]["model"].values()) == pytest.approx(1.0)
    assert rep["baselines"]["diagonal, length-blind"] == pytest.approx(0.0)
    ens = [str(runs[a] / "checkpoints" / "best.ckpt") for a in ("global", "local_m", "local_p")]
    res = run_cli(["align", *ens, *files, "--out", str(tmp_path / "ens")], stdin="")
    assert res.returncode == 0, res.stderr
    assert not (tmp_path / "ens" / "align.json").exists()  # a member's own file is not taken
    rep = json.loads((tmp_path / "ens" / "align_ensemble.json").read_text())
    links = (tmp_path / "ens" / "alignments_ensemble.txt").read_text().splitlines()
    assert len(rep["checkpoints"]) == 3 and [len(x.split()) for x in links] == [3, 2]
