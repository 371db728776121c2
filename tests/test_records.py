"""``luong_lit.reports`` and ``luong_lit.analysis.records``: each measurement has one name, the
record's field, in the files a run writes, in what it logs and in the analysis; files written
under older names read as the same records through the one table of old names."""

from __future__ import annotations

import json
from dataclasses import fields, replace
from pathlib import Path

import pytest

from luong_lit.analysis.records import MEASURES, RunRow, evaluation_measures, results_measures
from luong_lit.errors import ConfigError, DataError
from luong_lit.metrics.chrf_ter import text_scores, words_scores
from luong_lit.reports import (
    DECODINGS,
    METRICS,
    OLD_NAMES,
    Evaluation,
    Results,
    Scores,
    TestFigures,
    current_name,
)

REFS = [["a", "small", "dog", "runs", "."], ["two", "men", "sit", "on", "a", "bench", "."]]
PLAIN = [["a", "<unk>", "dog", "runs", "."], ["two", "men", "sit", "a", "bench", "."]]
GREEDY = [["a", "<unk>", "dog", "."], ["two", "man", "sit", "on", "a", "bench", "."]]
REPLACED = [["a", "small", "dog", "runs", "."], ["two", "men", "sit", "a", "bench", "."]]
ROOT = Path(__file__).resolve().parents[1]
#: a results.json as a run of an earlier version wrote it (beam figures as ``bleu_unk_beam``)
OLD_RESULTS = ROOT / "tests" / "data" / "results_v1.json"
#: an evaluate report kept from an earlier version (scores under ``bleu``, ``bleu_unk_replaced``)
OLD_EVAL = ROOT / "results/ladders/paper/table1_dropout/seed1234/eval_test_2016_flickr.json"


def _scored() -> dict[str, float]:
    """What the final test logs for three outputs that score differently."""
    return words_scores({"greedy": GREEDY, "beam": PLAIN, "beam_unk": REPLACED}, REFS)


def test_the_scores_of_each_output_are_named_as_the_record_names_its_fields():
    scored = _scored()
    assert set(scored) == {f"{m}_{d}" for m in METRICS for d in DECODINGS}
    assert set(scored) <= {f.name for f in fields(TestFigures)}
    for metric in ("bleu", "chrf", "ter"):  # three outputs, three different scores
        assert len({scored[f"{metric}_{d}"] for d in DECODINGS}) == 3, metric


def test_results_json_is_written_as_it_is_read():
    """The record a run writes reads back equal, under the same names as the analysis's."""
    figures = TestFigures.from_json({"ppl": 8.0, "sentences_bleu": 2.0, **_scored()})
    written = Results(checkpoint="best.ckpt", dev_ppl=9.5, tests={"t": figures},
                      signatures={"bleu": "nrefs:1"}, objective="val/ppl",
                      objective_value=9.5)  # fmt: skip
    as_json = written.to_json()
    assert as_json["t"]["bleu_beam_unk"] == _scored()["bleu_beam_unk"]
    assert as_json["t"]["sentences_bleu"] == 2 and as_json["bleu_signature"] == "nrefs:1"
    assert Results.from_json(json.loads(json.dumps(as_json))) == written
    name, found = results_measures(written)
    assert name == "t" and (found["dev_ppl"], found["ppl"]) == (9.5, 8.0)
    for key in (f"{m}_{d}" for m in ("bleu", "chrf", "ter") for d in DECODINGS):
        assert found[key] == _scored()[key], key
    assert set(found) <= set(MEASURES)


def test_a_stored_old_results_json_reads_under_todays_names():
    """A results.json written before the names were one: its ``bleu_unk_beam`` (and chrF's,
    chrF++'s, TER's) land on today's fields, and it writes back under today's names alone."""
    old = json.loads(OLD_RESULTS.read_text())
    figures = old["toy_test"]
    assert "bleu_unk_beam" in figures and "bleu_beam_unk" not in figures  # as it was written
    results = Results.read(OLD_RESULTS)
    read = results.tests["toy_test"]
    for m in METRICS:
        assert getattr(read, f"{m}_beam_unk") == figures[f"{m}_unk_beam"]
        assert getattr(read, f"{m}_beam") == figures[f"{m}_beam"]
        assert getattr(read, f"{m}_greedy") == figures[f"{m}_greedy"]
    assert read.others == {} and read.sentences_ppl == figures["sentences_ppl"]
    rewritten = results.to_json()
    assert not set(OLD_NAMES["results"]) & set(rewritten["toy_test"])
    assert rewritten["chrf_signature"] == old["chrf_signature"]
    assert rewritten["objective_value"] == old["objective_value"]
    assert {k: v for k, v in rewritten.items() if k != "toy_test"} == {
        k: v for k, v in old.items() if k != "toy_test"
    }


def test_a_stored_old_evaluate_report_reads_as_todays_record(tmp_path):
    old = json.loads(OLD_EVAL.read_text())
    assert "bleu_unk_replaced" in old and "beam" not in old  # as it was written
    report = Evaluation.read(OLD_EVAL)
    assert report.beam == Scores(**old["bleu"]) and report.beam_unk == Scores(
        **old["bleu_unk_replaced"]
    )
    assert report.beam_width == old["decoding"]["beam"] and report.model_ppl == old["ppl"][0]
    rewritten = report.to_json()
    assert rewritten["beam"] == old["bleu"] and rewritten["beam_unk"] == old["bleu_unk_replaced"]
    renamed = {OLD_NAMES["evaluate"].get(k, k): v for k, v in old.items()}
    assert rewritten == renamed  # nothing else lost or changed
    (tmp_path / "eval_t.json").write_text(json.dumps(rewritten))
    again = Evaluation.read(tmp_path / "eval_t.json")
    assert replace(again, path=None) == replace(report, path=None)


def test_an_evaluate_report_is_read_before_and_after_unk_replacement():
    plain, replaced = (text_scores(w, [" ".join(r) for r in REFS], "de") for w in (PLAIN, REPLACED))
    report = {"test": "t", "ppl": [7.0], "decoding": {"beam": 5}, "beam": plain,
              "beam_unk": replaced}  # fmt: skip
    found = evaluation_measures(Evaluation.from_json(report, path="eval_t.json"))
    assert found["bleu_beam"] == plain["bleu_tok"] != found["bleu_beam_unk"]
    assert (found["bleu_beam_unk"], found["chrf_beam_unk"]) == (
        replaced["bleu_tok"], replaced["chrf_tok"])  # fmt: skip
    assert found["ter_beam"] == plain["ter_tok"] and found["beam_width"] == 5
    assert [f.name for f in fields(Scores)] == list(plain)  # a field for every score, in order


def test_older_files_without_chrf_ter_or_outputs_read_as_none(tmp_path):
    """A report and a results.json as the kit wrote them before chrF and TER: BLEU is read,
    what they lack is None, and no output lines are claimed."""
    old = {"test": "t", "checkpoints": ["r/checkpoints/best.ckpt"], "ppl": [7.0],
           "decoding": {"beam": 5}, "bleu": {"bleu_tok": 20.0, "bleu_detok": 19.5},
           "bleu_unk_replaced": {"bleu_tok": 21.0, "bleu_detok": 20.5}}  # fmt: skip
    (tmp_path / "eval_t.json").write_text(json.dumps(old))
    report = Evaluation.read(tmp_path / "eval_t.json")
    assert report.beam_unk == Scores(bleu_tok=21.0, bleu_detok=20.5) and report.model_ppl == 7.0
    assert report.beam_unk.chrf_tok is None and report.lines("hyp") is None
    greedy = Results.from_json({"t": {"ppl": 7.0, "bleu_greedy": 18.0}})
    found = evaluation_measures(report) | results_measures(greedy)[1]
    row = RunRow(run="r", experiment="m30k_small", **found)
    assert (row.bleu_greedy, row.bleu_beam, row.bleu_beam_unk) == (18.0, 20.0, 21.0)
    assert row.chrf_beam is None and row.measure("ter_greedy") is None


def test_a_measure_has_one_name_and_a_wrong_one_is_refused():
    assert not {"bleu_unk_beam", "bleu_unk_replaced", "bleu_unk"} & set(MEASURES)
    with pytest.raises(KeyError, match="not a measure"):
        RunRow(run="r", experiment="m30k_small").measure("bleu_unk_beam")


def test_a_monitor_under_an_old_name_is_refused_with_its_new_one():
    from luong_lit.training.stopping import check_monitor

    assert current_name("val/bleu_unk_beam") == "val/bleu_beam_unk"
    assert current_name("val/bleu_beam") is None
    check_monitor("early_stopping.monitor", "val/bleu_beam_unk")  # today's name: taken
    with pytest.raises(ConfigError, match="now named val/bleu_beam_unk"):
        check_monitor("early_stopping.monitor", "val/bleu_unk_beam")


def test_a_sweeps_objective_under_an_old_name_is_refused_before_training(toy_corpus, tmp_path):
    from conftest import compose_cfg, tiny_overrides

    from luong_lit.training.build import build
    from luong_lit.training.run_folder import RunFolder
    from luong_lit.training.run_lines import chosen_by
    from luong_lit.training.stopping import MONITORABLE

    cfg = compose_cfg([*tiny_overrides(toy_corpus), "objective=val/bleu_unk_beam"], tmp_path)
    with pytest.raises(ConfigError, match=r"^objective=val/bleu_unk_beam: .*val/bleu_beam_unk"):
        build(cfg, RunFolder.open(cfg))
    old = tmp_path / "old_run" / ".hydra"  # an older run's saved config names its best.ckpt
    old.mkdir(parents=True)
    (old / "config.yaml").write_text(
        "callbacks:\n  model_checkpoint:\n    monitor: val/bleu_unk_beam\n"
    )
    assert chosen_by(old.parent) == MONITORABLE["val/bleu_beam_unk"]


def test_a_users_own_test_figure_is_kept_beside_the_kits():
    figures = TestFigures.from_json({"ppl": 3.0, "my_score": 0.5})
    assert figures.others == {"my_score": 0.5} and figures.get("my_score") == 0.5
    assert figures.to_json() == {"my_score": 0.5, "ppl": 3.0}


@pytest.mark.parametrize("text", ["[1, 2]", "{not json"])
def test_a_file_that_is_not_a_report_is_named_in_one_line(tmp_path, text):
    (tmp_path / "eval_t.json").write_text(text)
    with pytest.raises(DataError, match=r"eval_t.json: not a report of `python -m luong_lit"):
        Evaluation.read(tmp_path / "eval_t.json")
    (tmp_path / "results.json").write_text(text)
    with pytest.raises(DataError, match=r"results.json: not a run's results.json"):
        Results.read(tmp_path / "results.json")
