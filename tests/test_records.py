"""``luong_lit.analysis.records``: each measurement read under one name from the files that
hold it under theirs (``results.json``, ``eval_TEST.json``), older files included."""

from __future__ import annotations

import json

import pytest

from luong_lit.analysis.records import (
    MEASURES,
    Evaluation,
    RunRow,
    Scores,
    evaluation_measures,
    results_measures,
)
from luong_lit.errors import DataError
from luong_lit.metrics.chrf_ter import text_scores, words_scores

REFS = [["a", "small", "dog", "runs", "."], ["two", "men", "sit", "on", "a", "bench", "."]]
PLAIN = [["a", "<unk>", "dog", "runs", "."], ["two", "men", "sit", "a", "bench", "."]]
GREEDY = [["a", "<unk>", "dog", "."], ["two", "man", "sit", "on", "a", "bench", "."]]
REPLACED = [["a", "small", "dog", "runs", "."], ["two", "men", "sit", "a", "bench", "."]]


def test_results_json_logged_names_are_read_as_the_rows_one_name():
    """``trainer.test`` logs each score of ``words_scores`` as ``KEY_greedy`` and ``KEY_beam``
    (``bleu_unk_beam`` after unk replacement): each lands on the measure of that decoding."""
    beam = words_scores(PLAIN, REPLACED, REFS)
    greedy = words_scores(GREEDY, None, REFS)
    for metric in ("bleu", "chrf", "ter"):  # three outputs, three different scores
        assert len({greedy[metric], beam[metric], beam[f"{metric}_unk"]}) == 3, metric
    logged = {f"{k}_beam": v for k, v in beam.items()} | {
        f"{k}_greedy": v for k, v in greedy.items()
    }
    name, found = results_measures(
        {"dev_ppl": 9.5, "t": {"ppl": 8.0, **logged}, "checkpoint": "best.ckpt"}
    )
    assert name == "t" and (found["dev_ppl"], found["ppl"]) == (9.5, 8.0)
    for metric in ("bleu", "chrf", "ter"):
        assert found[f"{metric}_greedy"] == greedy[metric]
        assert found[f"{metric}_beam"] == beam[metric]
        assert found[f"{metric}_beam_unk"] == beam[f"{metric}_unk"]
    assert set(found) <= set(MEASURES)


def test_an_evaluate_report_is_read_before_and_after_unk_replacement():
    plain, replaced = (text_scores(w, [" ".join(r) for r in REFS], "de") for w in (PLAIN, REPLACED))
    report = {"test": "t", "ppl": [7.0], "decoding": {"beam": 5}, "bleu": plain,
              "bleu_unk_replaced": replaced}  # fmt: skip
    found = evaluation_measures(Evaluation.from_json(report, path="eval_t.json"))  # type: ignore[arg-type]
    assert found["bleu_beam"] == plain["bleu_tok"] != found["bleu_beam_unk"]
    assert (found["bleu_beam_unk"], found["chrf_beam_unk"]) == (
        replaced["bleu_tok"], replaced["chrf_tok"])  # fmt: skip
    assert found["ter_beam"] == plain["ter_tok"] and found["beam_width"] == 5
    assert set(Scores.__dataclass_fields__) == set(plain)  # a field for every score written


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
    found = (
        evaluation_measures(report) | results_measures({"t": {"ppl": 7.0, "bleu_greedy": 18.0}})[1]
    )
    row = RunRow(run="r", experiment="m30k_small", **found)
    assert (row.bleu_greedy, row.bleu_beam, row.bleu_beam_unk) == (18.0, 20.0, 21.0)
    assert row.chrf_beam is None and row.measure("ter_greedy") is None


def test_a_measure_has_one_name_and_a_wrong_one_is_refused():
    assert not {"bleu_unk_beam", "bleu_unk_replaced", "bleu_unk"} & set(MEASURES)
    with pytest.raises(KeyError, match="not a measure"):
        RunRow(run="r", experiment="m30k_small").measure("bleu_unk_beam")


def test_a_file_that_is_not_a_report_is_named_in_one_line(tmp_path):
    (tmp_path / "eval_t.json").write_text("[1, 2]")
    with pytest.raises(DataError, match=r"eval_t.json: not a report of `python -m luong_lit"):
        Evaluation.read(tmp_path / "eval_t.json")
