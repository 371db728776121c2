"""``scripts/studies/``: the quality studies run as a user runs them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

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


@pytest.mark.skipif(not os.environ.get("LUONG_LIT_DATA"), reason="needs the corpora's mirror")
def test_cased_bleu_makes_a_kept_runs_lines_natural_text_as_translate_does(capsys):
    """A kept run's tokenised lowercased lines, made natural (recased, detokenised) and
    scored with sacreBLEU 13a: lowercased, the same lines score as the tokenised BLEU the
    tables print (detokenising loses nothing BLEU counts); cased, less; the signature says so."""
    from luong_lit.metrics.bleu import corpus_bleu_tok
    from scripts.studies.cased_bleu import main, natural, read

    run = REPO / "results/ladders/paper_long/table1_local_p_general/seed1234"
    lines, refs = natural(run, "test_2016_flickr", "hyp", Path(os.environ["LUONG_LIT_DATA"]))
    assert len(lines) == len(refs) == 1000
    assert sum(line[:1].isupper() for line in lines) > 950  # recased: sentences start cased
    from luong_lit.reports import Evaluation

    kept = Evaluation.read(run / "eval_test_2016_flickr.json").lines("hyp")
    assert kept is not None and kept[0] == read(run / "eval_test_2016_flickr.hyp")
    tok = corpus_bleu_tok(*kept)
    main([str(run)])
    said = capsys.readouterr().out
    cased, lower = (float(said.split(f"{k} 13a ")[1].split()[0]) for k in ("cased", "lowercased"))
    assert abs(lower - tok) < 0.1 and cased < lower
    assert f"tokenised {tok:.2f}" in said and "case:mixed|eff:no|tok:13a" in said


def test_an_exported_runs_references_are_kept_once_and_read_back_the_same(tmp_path):
    """Two runs of one test set exported: their records read the same lines as before, from
    one shared reference file, and exporting again changes nothing."""
    import json

    from luong_lit.reports import Evaluation
    from scripts.studies.export_runs import export

    refs = ["ein hund .", "zwei männer ."]
    for seed in (1, 2):
        run = tmp_path / "logs" / f"seed{seed}"
        (run / ".hydra").mkdir(parents=True)
        (run / ".hydra" / "config.yaml").write_text("seed: 1\n")
        record = {"test": "t", "outputs": {"hyp": "eval_t.hyp", "ref": "eval_t.ref"}}
        (run / "eval_t.json").write_text(json.dumps(record, indent=2))
        (run / "eval_t.hyp").write_text(f"hyp {seed}\nhyp\n")
        (run / "eval_t.ref").write_text("\n".join(refs) + "\n")
    shared = tmp_path / "results" / "references"
    for seed in (1, 2):
        dest = export(tmp_path / "logs" / f"seed{seed}", tmp_path / "results" / "r" / f"seed{seed}",
                      shared)  # fmt: skip
        assert not (dest / "eval_t.ref").exists()
        hyp, ref = Evaluation.read(dest / "eval_t.json").lines("hyp")
        assert (hyp, ref) == ([f"hyp {seed}", "hyp"], refs)
    assert len(list(shared.iterdir())) == 1  # one test set, one file
    before = (tmp_path / "results" / "r" / "seed1" / "eval_t.json").read_text()
    export(tmp_path / "logs" / "seed1", tmp_path / "results" / "r" / "seed1", shared)
    assert (tmp_path / "results" / "r" / "seed1" / "eval_t.json").read_text() == before


def test_the_verdict_queues_list_their_jobs_without_the_europarl_cut_unless_asked(
    tmp_path, monkeypatch
):
    """Listing or running the paper's queues never writes (or downloads) the Europarl cut."""
    from scripts.studies import verdict_runs

    def cut(logs):
        raise AssertionError("the Europarl cut was asked for")

    monkeypatch.setattr(verdict_runs, "europarl", cut)
    jobs = verdict_runs.jobs(tmp_path, ["paper_seeds"], (2,))
    assert {j.study for j in jobs} == {"paper_long", "paper_long_deen"}
    with pytest.raises(AssertionError, match="Europarl cut"):
        verdict_runs.jobs(tmp_path, ["europarl"], (2,))
