"""``luong_lit.evaluation``: ``evaluate``'s report of a checkpoint on a test set."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_cli


def evaluate_toy(checkpoints, out_dir: Path, *extra: str):
    """``evaluate CKPT... --test toy --out OUT_DIR --quiet EXTRA`` in a subprocess."""
    paths = [str(c) for c in checkpoints]
    return run_cli(["evaluate", *paths, "--test", "toy", "--out", str(out_dir), "--quiet", *extra])


def test_evaluate_writes_markdown_and_json(trained, tmp_path):
    out, _, _ = trained
    ckpt = out / "checkpoints" / "best.ckpt"
    res = evaluate_toy([ckpt], tmp_path, "--beam", "3")
    assert res.returncode == 0, res.stderr.decode()
    report = json.loads((tmp_path / "eval_toy.json").read_text())
    assert report["ppl"][0] > 1.0 and len(report["samples"]) == 5
    with open(out / "data" / "test.tgt", encoding="utf-8") as fh:  # the toy test set's references
        refs = fh.read().splitlines()
    hyps = run_cli(["translate", str(ckpt), "--beam", "3",
                    "-i", str(out / "data" / "test.src"), "--quiet"], stdin=None)  # fmt: skip
    from luong_lit.metrics.bleu import corpus_bleu_tok

    direct = corpus_bleu_tok(hyps.stdout.decode().splitlines(), refs)
    assert report["beam"]["bleu_tok"] == pytest.approx(direct, abs=1e-6)  # translate's output
    assert set(report["beam_unk"]) == {
        f"{m}_{kind}" for m in ("bleu", "chrf", "chrfpp", "ter") for kind in ("tok", "detok")
    }
    assert sum(r["n"] for r in report["length_buckets"]) == 10
    from luong_lit.reports import Evaluation

    record = Evaluation.read(tmp_path / "eval_toy.json")  # every score has its field
    assert record.beam_unk.to_json() == report["beam_unk"] and record.beam_width == 3
    assert record.to_json() == report  # the report is the record, written as it is read
    assert record.lines("hyp")[0] == hyps.stdout.decode().splitlines()
    md = (tmp_path / "eval_toy.md").read_text()
    assert "detokenised sacreBLEU 13a" in md and "tokenised (multi-bleu.perl equivalent" in md
    assert "| BLEU on cased text |" in md  # the toy corpus keeps its case
    assert f"wrote {tmp_path / 'eval_toy.md'}, {tmp_path / 'eval_toy.json'}" in res.stdout.decode()
    assert (tmp_path / "eval_toy_bleu_by_length.png").stat().st_size > 1000
    res = evaluate_toy([ckpt], tmp_path / "int8", "--beam", "3", "--int8", "all")
    assert res.returncode == 0, res.stderr.decode()
    int8 = json.loads((tmp_path / "int8" / "eval_toy.json").read_text())
    assert int8["decoding"]["int8"] == "all" and report["decoding"]["int8"] is None
    assert int8["ppl"] == report["ppl"]  # scoring keeps the float weights
    assert "ppl_ensemble" not in report
    for extra in ([], ["--int8", "all"]):  # scoring keeps the float weights here too
        res = evaluate_toy([ckpt, ckpt], tmp_path / "ens", "--beam", "1", *extra)
        assert res.returncode == 0, res.stderr.decode()
        ens = json.loads((tmp_path / "ens" / "eval_toy_ensemble.json").read_text())
        assert ens["ppl_ensemble"] == pytest.approx(
            report["ppl"][0], rel=1e-5
        )  # two copies: the model's own


def test_evaluate_reads_only_the_test_set_and_keeps_raw_references(trained, tmp_path):
    from luong_lit.checkpoint import load_model
    from luong_lit.checkpoint.groups import data_options
    from luong_lit.data.loading.datamodule import TranslationDataModule
    from luong_lit.data.loading.model_data import load_split

    out, test, _ = trained
    _, src_vocab, tgt_vocab, meta = load_model(out / "checkpoints" / "best.ckpt")
    stored = meta.data.config
    full = TranslationDataModule(**{k: v for k, v in stored.items() if not k.startswith("_")})
    full.setup("test")
    gone = {"src": str(tmp_path / "gone.src"), "tgt": str(tmp_path / "gone.tgt")}
    meta = meta.replace(data=data_options({**stored, "train": gone}))
    loaded = load_split(meta, "toy", src_vocab, tgt_vocab)  # the training files are gone
    assert (
        loaded.split.src_ids == full.splits["toy"].src_ids
        and loaded.split.tgt_ids == full.splits["toy"].tgt_ids
    )
    assert loaded.raw_refs is None  # pre-tokenised data: no raw text besides the tokens
    meta = meta.replace(data=data_options({**stored, "train": gone, "tokenizer": "moses"}))
    moses = load_split(meta, "toy", src_vocab, tgt_vocab)
    assert moses.raw_refs == (Path(test["tgt"]).read_text(encoding="utf-8").splitlines())


def test_evaluate_says_bleu_compares_lowercased_text_for_a_lowercased_corpus():
    from luong_lit.checkpoint import CheckpointMeta
    from luong_lit.checkpoint.groups import data_options, net_options
    from luong_lit.evaluation import compared, markdown
    from luong_lit.reports import Evaluation

    def meta_of(data: dict) -> CheckpointMeta:
        return CheckpointMeta(net_options({}), (), (), data=data_options(data))

    meta = meta_of({"dataset": "multi30k", "variant": "tok", "tokenizer": "none"})
    assert compared(meta).startswith("lowercased text")
    assert compared(meta_of({"dataset": "multi30k", "variant": "raw"})) == "cased text"
    report = {"test": "t", "checkpoints": ["a.ckpt"], "ppl": [2.0], "decoding": {},
              "bleu": {"bleu_tok": 1.0, "bleu_detok": 1.0}, "unk_in_output": 0,
              "bleu_unk_replaced": {"bleu_tok": 1.0, "bleu_detok": 1.0}, "length_buckets": [],
              "unk_replacement": {"unk": 0}, "samples": [], "compared": compared(meta)}  # fmt: skip
    md = markdown(Evaluation.from_json(report))
    assert "| BLEU on lowercased text (the model's corpus is lowercased) |" in md
