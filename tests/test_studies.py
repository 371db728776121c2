"""``scripts/studies/``: the quality studies run as a user runs them."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from conftest import REPO


def test_raw_text_benchmark_rebuilds_the_kits_output_from_tokens(lowercase_model, tmp_path):
    """The benchmark's "kit" recasing of ``--pretokenized`` output equals ``translate``'s own."""
    import json

    (tmp_path / "src.en").write_text("A B C.\nD, E F!\nG H\n", encoding="utf-8")
    (tmp_path / "ref.de").write_text("X B c.\nY B d!\nZ b\n", encoding="utf-8")
    cmd = [sys.executable, "-m", "scripts.studies.raw_text", str(lowercase_model), "--beam", "2"]
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


def test_precision_by_third_matches_left_to_right_with_clipping():
    """Each word is matched once at most, the first copies first; thirds by relative position."""
    from scripts.studies.ngram_position import precision_by_third

    # 6 words: thirds (a a) (b x) (a c); the reference holds two a's, one b, one c
    hyps, refs = [["a", "a", "b", "x", "a", "c"]], [["c", "a", "b", "a"]]
    assert precision_by_third(hyps, refs) == [100.0, 50.0, 50.0]
    # a 2-word output has no middle third
    assert precision_by_third([["a", "b"]], [["b"]]) == [0.0, None, 100.0]


def test_ngram_report_of_the_reference_itself_is_perfect_and_of_a_half_is_short():
    from scripts.studies.ngram_position import ngram_report

    refs = ["a man rides a red bike .", "two dogs play in the snow ."]
    same = ngram_report(refs, refs)
    assert same["bleu"] == pytest.approx(100.0)
    assert same["bp"] == 1.0 and same["length_ratio"] == 1.0
    assert same["precision_by_third"] == [100.0, 100.0, 100.0]
    half = ngram_report(["a man rides", "two dogs play"], refs)
    assert half["length_ratio"] == 6 / 14 and half["bp"] < 1.0
    assert half["precisions"][0] == 100.0 and half["precision_by_third"] == [100.0] * 3


@pytest.mark.long
def test_ladder_evals_decodes_each_run_and_keeps_its_outputs(toy_corpus, tmp_path):
    """Two seeds of a ladder's last row, as a sweep leaves them: each run's test set decoded
    into its folder, and the row's ensemble into ``ensemble_table1/``, once."""
    import subprocess
    import sys

    from conftest import REPO, run_env, saved_run, write_corpus

    test = write_corpus(tmp_path / "data", "test", 6, 3)
    extra = ["trainer.max_epochs=1", f"+data.test.toy.src={test['src']}",
             f"+data.test.toy.tgt={test['tgt']}"]  # fmt: skip
    for seed in (1, 2):
        saved_run(tmp_path / "sweep" / f"{seed}_ladder", toy_corpus,
                  ["ladder=table1_local_p_general", f"seed={seed}"], extra)  # fmt: skip
    cmd = [sys.executable, "-m", "scripts.studies.ladder_evals", str(tmp_path / "sweep")]
    res = subprocess.run(cmd, cwd=REPO, env=run_env(), capture_output=True, text=True)
    assert res.returncode == 0, res.stderr[-2000:]
    for seed in (1, 2):
        run = tmp_path / "sweep" / f"{seed}_ladder"
        assert (run / "eval_toy.json").is_file() and (run / "eval_toy.hyp").is_file()
    assert (tmp_path / "sweep" / "ensemble_table1" / "eval_toy_ensemble.json").is_file()
    again = subprocess.run(cmd, cwd=REPO, env=run_env(), capture_output=True, text=True)
    assert again.returncode == 0 and "evaluate" not in again.stdout  # nothing decoded twice
