"""The translate and evaluate command-line tools on a model trained here, and the beam callback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from conftest import compose_cfg, tiny_overrides, write_corpus

from luong_lit.decoding.beam import BeamConfig
from luong_lit.training.run import train

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def trained(toy_corpus, tmp_path_factory):
    """A copy-task model trained for a few epochs, with a test set and the beam callback on."""
    out = tmp_path_factory.mktemp("run")
    test = write_corpus(out / "data", "test", 10, 3)
    cfg = compose_cfg(
        tiny_overrides(toy_corpus)
        + [
            "trainer.max_epochs=3",
            "model.net.hidden_size=16",
            "model.net.embed_size=16",
            f"+data.test.toy.src={test['src']}",
            f"+data.test.toy.tgt={test['tgt']}",
            "callbacks.beam_bleu.every_n_epochs=1",
            "callbacks.beam_bleu.beam_size=3",
            "logger=csv",
        ],
        out,
    )
    metrics = train(cfg)
    return out, test, metrics


def run(module, args, stdin=None, timeout=120):
    env = {**os.environ, "PYTHONWARNINGS": "ignore", "OMP_NUM_THREADS": "1"}
    return subprocess.run(
        [sys.executable, "-m", "luong_lit", module, *args],
        cwd=REPO,
        env=env,
        input=stdin,
        capture_output=True,
        timeout=timeout,
    )


def test_beam_callback_logs_dev_bleu_before_and_after_unk_replacement(trained):
    _, _, metrics = trained
    assert 0.0 <= metrics["val/bleu_beam"] <= 100.0
    assert "val/bleu_unk_beam" in metrics


def test_trainer_test_logs_ppl_and_beam_bleu_of_every_test_set(toy_corpus, tmp_path):
    from luong_lit.decoder import Decoder
    from luong_lit.metrics.perplexity import perplexity
    from luong_lit.training.build import build

    test = write_corpus(tmp_path / "data", "test", 12, 5)
    cfg = compose_cfg(
        tiny_overrides(toy_corpus)
        + [
            "trainer.max_epochs=1",
            "model.net.hidden_size=16",
            "model.net.embed_size=16",
            f"+data.test.a.src={test['src']}",
            f"+data.test.a.tgt={test['tgt']}",
            f"+data.test.b.src={toy_corpus['dev']['src']}",
            f"+data.test.b.tgt={toy_corpus['dev']['tgt']}",
            "callbacks.beam_bleu.every_n_epochs=0",
            "callbacks.beam_bleu.beam_size=3",
            "logger=none",
        ],
        tmp_path,
    )
    dm, model, trainer = build(cfg)
    trainer.fit(model, dm)
    res = trainer.test(model, dm, verbose=False)[0]
    net = model.net.eval()
    for name in ("a", "b"):
        split = dm.splits[name]
        assert res[f"test/{name}/ppl"] == pytest.approx(perplexity(net, split.examples()), rel=1e-4)
        direct = Decoder(net, dm.tgt_vocab).split_bleu(
            split, search=BeamConfig(beam_size=3), batch_size=64, replace_unk=True
        )
        assert res[f"test/{name}/bleu_beam"] == pytest.approx(direct["bleu"], abs=1e-6)
        assert res[f"test/{name}/bleu_unk_beam"] == pytest.approx(direct["bleu_unk"], abs=1e-6)


def test_translate_keeps_line_counts_and_empty_lines(trained, tmp_path):
    out, _, _ = trained
    ckpt = str(out / "checkpoints" / "best.ckpt")
    src = tmp_path / "in.txt"
    src.write_text("a b c\n\nd e f g\n" + " ".join(["a"] * 80) + "\n", encoding="utf-8")
    res = run(
        "translate",
        [
            ckpt,
            "-i",
            str(src),
            "-o",
            str(tmp_path / "o.txt"),
            "--beam",
            "3",
            "--replace-unk",
            "--max-src-len",
            "20",
            "--quiet",
        ],
    )
    assert res.returncode == 0, res.stderr.decode()
    lines = (tmp_path / "o.txt").read_text(encoding="utf-8").split("\n")
    assert len(lines) == 5 and lines[1] == "" and lines[4] == ""  # 4 lines + final newline
    # stdin to stdout, greedy, and an ensemble of the best and last checkpoints
    res = run(
        "translate",
        [ckpt, str(out / "checkpoints" / "last.ckpt"), "--beam", "1", "--quiet"],
        stdin=b"a b\nc d e\n",
    )
    assert res.returncode == 0 and len(res.stdout.decode().splitlines()) == 2
    res = run("translate", [ckpt, "--beam", "3", "--n-best", "2", "--quiet"], stdin=b"a b\n")
    assert [x.split(" ||| ")[0] for x in res.stdout.decode().splitlines()] == ["0", "0"]
    # two worker processes: the same lines in the same order; a bad worker count is named
    many = "".join(
        f"{' '.join('abcdefg'[: 1 + i % 7])}\n" if i % 5 else "\n" for i in range(40)
    ).encode()
    outs = [
        run(
            "translate",
            [ckpt, "--beam", "3", "--replace-unk", "--batch-size", "4", "--quiet", *w],
            stdin=many,
        )
        for w in ([], ["--workers", "2"])
    ]
    assert all(r.returncode == 0 for r in outs) and outs[0].stdout == outs[1].stdout
    assert len(outs[1].stdout.decode().split("\n")) == 41
    res = run("translate", [ckpt, "--workers", "0"], stdin=b"a\n")
    assert (
        res.returncode == 2
        and b"--workers must be an integer >= 1" in res.stderr
        and b"Traceback" not in res.stderr
    )


def test_translate_n_best_keeps_empty_lines_and_replaces_unks(trained, tmp_path):
    out, _, _ = trained
    state = torch.load(out / "checkpoints" / "best.ckpt", weights_only=True)
    state["state_dict"]["net.decoder.W_s.bias"][1] += 6.0  # <unk> becomes a likely output word
    torch.save(state, tmp_path / "unky.ckpt")
    ckpt = str(tmp_path / "unky.ckpt")
    src = ["zz a yy b", "", "c xx d"]
    common = [ckpt, "--beam", "3", "--n-best", "2", "--quiet"]
    plain, replaced = (
        run("translate", common + extra, stdin="\n".join(src).encode() + b"\n")
        for extra in ([], ["--replace-unk"])
    )
    assert plain.returncode == 0 and replaced.returncode == 0, replaced.stderr.decode()
    plain, replaced = (r.stdout.decode().splitlines() for r in (plain, replaced))
    assert [x.split(" ||| ")[0] for x in replaced] == ["0", "0", "1", "1", "2", "2"]
    assert replaced[2:4] == ["1 |||  ||| 0.0000"] * 2
    n_unk = 0
    for p, r in zip(plain, replaced):
        i, p_words, r_words = (
            int(p.split(" ||| ")[0]),
            p.split(" ||| ")[1].split(),
            r.split(" ||| ")[1].split(),
        )
        assert len(p_words) == len(r_words) and "<unk>" not in r_words
        for pw, rw in zip(p_words, r_words):
            assert rw == pw or (pw == "<unk>" and rw in src[i].split())
        n_unk += p_words.count("<unk>")
    assert n_unk > 0  # the unknown source words came out as <unk> before replacement


def test_translate_length_options_apply_to_greedy_and_the_authors_decoder(trained):
    out, _, _ = trained
    ckpt = str(out / "checkpoints" / "best.ckpt")
    # "a b": greedy keeps 3·2 to 3·2 + 5 words; the authors' decoder counts </s> in S: 3·3 words
    for extra, lengths in ((["--beam", "1"], range(6, 12)), (["--authors-decoder"], [9])):
        res = run(
            "translate",
            [ckpt, "--min-len-ratio", "3", "--max-len-ratio", "3", "--quiet", *extra],
            stdin=b"a b\n",
        )
        assert res.returncode == 0, res.stderr.decode()
        assert len(res.stdout.decode().split()) in lengths, (extra, res.stdout)
    res = run("translate", [ckpt, "--authors-decoder", "--length-penalty", "avg"], stdin=b"a\n")
    assert res.returncode == 2 and b"--authors-decoder ranks by raw score" in res.stderr
    res = run("translate", [ckpt, "--authors-decoder", "--n-best", "12", "--quiet"], stdin=b"a b\n")
    assert res.returncode == 0 and len(res.stdout.decode().splitlines()) == 12
    res = run("translate", [ckpt, "--min-len-ratio", "2", "--max-len-ratio", "1"], stdin=b"a\n")
    assert (
        res.returncode == 2 and b"--min-len-ratio 2.0 and --max-len-ratio 1.0 must be" in res.stderr
    )
    res = run("translate", [ckpt, "--beam", "500"], stdin=b"a\n")
    assert (
        res.returncode == 2
        and b"beam size 500 is larger than the model's target vocabulary" in res.stderr
    )
    res = run("translate", [ckpt, "--n-best", "6"], stdin=b"a\n")
    assert (
        res.returncode == 2
        and b"--n-best 6 needs a beam of at least 6 (the beam is 5)" in res.stderr
    )


def test_translate_names_a_damaged_checkpoint(trained, tmp_path):
    out, _, _ = trained
    ckpt = torch.load(out / "checkpoints" / "best.ckpt", weights_only=True)
    ckpt["state_dict"] = {k: v for k, v in ckpt["state_dict"].items() if "W_s" not in k}
    torch.save(ckpt, tmp_path / "damaged.ckpt")
    res = run("translate", [str(tmp_path / "damaged.ckpt")], stdin=b"a\n")
    assert res.returncode == 2 and b"damaged.ckpt: its weights do not fit" in res.stderr
    assert b"Traceback" not in res.stderr


def test_translate_empty_file_and_bad_input(trained, tmp_path):
    out, _, _ = trained
    ckpt = str(out / "checkpoints" / "best.ckpt")
    (tmp_path / "empty.txt").write_bytes(b"")
    res = run("translate", [ckpt, "-i", str(tmp_path / "empty.txt"), "-o", str(tmp_path / "o.txt")])
    assert res.returncode == 0 and (tmp_path / "o.txt").read_bytes() == b""
    (tmp_path / "latin1.txt").write_bytes(b"a b\nd\xe9j\xe0\n")
    res = run("translate", [ckpt, "-i", str(tmp_path / "latin1.txt")])
    assert res.returncode == 2 and b"latin1.txt:2: not valid UTF-8" in res.stderr
    assert b"Traceback" not in res.stderr
    res = run("translate", [str(tmp_path / "none.ckpt")], stdin=b"a\n")
    assert res.returncode == 2 and b"none.ckpt: checkpoint does not exist" in res.stderr
    (tmp_path / "junk.ckpt").write_bytes(b"\x00junk")
    res = run("translate", [str(tmp_path / "junk.ckpt")], stdin=b"a\n")
    assert res.returncode == 2 and b"junk.ckpt: not a readable checkpoint" in res.stderr
    assert b"Traceback" not in res.stderr


def test_ensemble_with_a_different_vocabulary_is_refused(trained, tmp_path):
    out, _, _ = trained
    ckpt = torch.load(out / "checkpoints" / "best.ckpt", weights_only=True)
    ckpt["luong_lit"]["tgt_vocab"] = (
        ckpt["luong_lit"]["tgt_vocab"][:4] + sorted(ckpt["luong_lit"]["tgt_vocab"][4:])[::-1]
    )
    torch.save(ckpt, tmp_path / "other.ckpt")
    res = run(
        "translate",
        [str(out / "checkpoints" / "best.ckpt"), str(tmp_path / "other.ckpt")],
        stdin=b"a\n",
    )
    assert res.returncode == 2 and b"target vocabulary differs" in res.stderr


def test_evaluate_writes_markdown_and_json(trained, tmp_path):
    out, _, _ = trained
    res = run(
        "evaluate",
        [
            str(out / "checkpoints" / "best.ckpt"),
            "--test",
            "toy",
            "--beam",
            "3",
            "--out",
            str(tmp_path),
            "--quiet",
        ],
    )
    assert res.returncode == 0, res.stderr.decode()
    report = json.loads((tmp_path / "eval_toy.json").read_text())
    assert report["ppl"][0] > 1.0 and len(report["samples"]) == 5
    assert (
        0.0 <= report["bleu"]["bleu_tok"] <= 100.0 and "bleu_detok" in report["bleu_unk_replaced"]
    )
    assert sum(r["n"] for r in report["length_buckets"]) == 10
    md = (tmp_path / "eval_toy.md").read_text()
    assert "detokenised sacreBLEU 13a" in md and "tokenised (multi-bleu.perl equivalent" in md
    assert "| BLEU on cased text |" in md  # the toy corpus keeps its case
    assert f"wrote {tmp_path / 'eval_toy.md'}, {tmp_path / 'eval_toy.json'}" in res.stdout.decode()
    assert (tmp_path / "eval_toy_bleu_by_length.png").stat().st_size > 1000
    res = run(
        "evaluate",
        [
            str(out / "checkpoints" / "best.ckpt"),
            "--test",
            "toy",
            "--beam",
            "3",
            "--out",
            str(tmp_path / "int8"),
            "--quiet",
            "--int8",
            "all",
        ],
    )
    assert res.returncode == 0, res.stderr.decode()
    int8 = json.loads((tmp_path / "int8" / "eval_toy.json").read_text())
    assert int8["decoding"]["int8"] == "all" and report["decoding"]["int8"] is None
    assert int8["ppl"] == report["ppl"]  # scoring keeps the float weights
    assert "ppl_ensemble" not in report
    for extra in ([], ["--int8", "all"]):  # scoring keeps the float weights here too
        res = run(
            "evaluate",
            [str(out / "checkpoints" / "best.ckpt")] * 2
            + ["--test", "toy", "--beam", "1", "--out", str(tmp_path / "ens"), "--quiet", *extra],
        )
        assert res.returncode == 0, res.stderr.decode()
        ens = json.loads((tmp_path / "ens" / "eval_toy_ensemble.json").read_text())
        assert ens["ppl_ensemble"] == pytest.approx(
            report["ppl"][0], rel=1e-5
        )  # two copies: the model's own


def test_malloc_tuning_takes_on_glibc_and_can_be_switched_off(monkeypatch):
    import platform

    from luong_lit.runtime import tune_malloc

    monkeypatch.setenv("LUONG_LIT_MALLOC_TUNE", "0")
    assert tune_malloc() is False
    monkeypatch.delenv("LUONG_LIT_MALLOC_TUNE")
    if platform.system() == "Linux" and platform.libc_ver()[0] == "glibc":
        assert tune_malloc() is True


def test_evaluate_reads_only_the_test_set_and_keeps_raw_references(trained, tmp_path):
    from luong_lit.checkpoint import load_model
    from luong_lit.data.loading.datamodule import TranslationDataModule
    from luong_lit.data.loading.model_data import load_split

    out, test, _ = trained
    _, src_vocab, tgt_vocab, meta = load_model(out / "checkpoints" / "best.ckpt")
    full = TranslationDataModule(**{k: v for k, v in meta["data"].items() if not k.startswith("_")})
    full.setup("test")
    meta["data"]["train"] = {"src": str(tmp_path / "gone.src"), "tgt": str(tmp_path / "gone.tgt")}
    loaded = load_split(meta, "toy", src_vocab, tgt_vocab)  # the training files are gone
    assert (
        loaded.split.src_ids == full.splits["toy"].src_ids
        and loaded.split.tgt_ids == full.splits["toy"].tgt_ids
    )
    assert loaded.raw_refs is None  # pre-tokenised data: no raw text besides the tokens
    meta["data"]["tokenizer"] = "moses"
    moses = load_split(meta, "toy", src_vocab, tgt_vocab)
    assert moses.raw_refs == (Path(test["tgt"]).read_text(encoding="utf-8").splitlines())


def test_sentencepiece_model_translates_raw_text(toy_corpus, tmp_path, monkeypatch):
    monkeypatch.setenv(
        "LUONG_LIT_CACHE", str(tmp_path / "cache")
    )  # the sentencepiece model's cache
    cfg = compose_cfg(
        tiny_overrides(toy_corpus)
        + [
            "trainer.max_epochs=1",
            "data.tokenizer=sentencepiece",
            "+data.tokenizer_opts.vocab_size=40",
            "test_after_training=false",
        ],
        tmp_path,
    )
    train(cfg)
    ckpt = torch.load(tmp_path / "checkpoints" / "best.ckpt", weights_only=True)
    assert set(ckpt["luong_lit"]["sentencepiece"]) == {"src", "tgt"}
    kept = dict(
        ckpt,
        luong_lit=dict(
            ckpt["luong_lit"],
            data=dict(
                ckpt["luong_lit"]["data"],
                train={"src": str(tmp_path / "gone.src"), "tgt": str(tmp_path / "gone.tgt")},
            ),
        ),
    )
    torch.save(
        kept, tmp_path / "kept.ckpt"
    )  # its training data is gone: the pieces come from inside
    older = dict(
        ckpt, luong_lit={k: v for k, v in ckpt["luong_lit"].items() if k != "sentencepiece"}
    )
    torch.save(older, tmp_path / "older.ckpt")  # no pieces inside: rebuilt from the training data
    outputs = []
    for name, cache in (("kept", "empty"), ("older", "cache")):
        env = {
            **os.environ,
            "PYTHONWARNINGS": "ignore",
            "OMP_NUM_THREADS": "1",
            "LUONG_LIT_CACHE": str(tmp_path / cache),
        }
        res = subprocess.run(
            [
                sys.executable,
                "-m",
                "luong_lit",
                "translate",
                str(tmp_path / f"{name}.ckpt"),
                "--beam",
                "2",
                "--quiet",
            ],
            input=b"a b c\n\nd e\n",
            capture_output=True,
            timeout=120,
            cwd=REPO,
            env=env,
        )
        assert res.returncode == 0, res.stderr.decode()
        outputs.append(res.stdout.decode())
        lines = outputs[-1].split("\n")
        assert (
            len(lines) == 4 and lines[1] == "" and "\u2581" not in outputs[-1]
        )  # words, not pieces
    assert outputs[0] == outputs[1] and not (tmp_path / "empty").exists()


def test_evaluate_says_bleu_compares_lowercased_text_for_a_lowercased_corpus():
    from luong_lit.evaluation import compared, markdown

    meta = {"data": {"dataset": "multi30k", "variant": "tok", "tokenizer": "none"}}
    assert compared(meta).startswith("lowercased text")
    assert compared({"data": {"dataset": "multi30k", "variant": "raw"}}) == "cased text"
    report = {"test": "t", "checkpoints": ["a.ckpt"], "ppl": [2.0], "decoding": {},
              "bleu": {"bleu_tok": 1.0, "bleu_detok": 1.0}, "unk_in_output": 0,
              "bleu_unk_replaced": {"bleu_tok": 1.0, "bleu_detok": 1.0}, "length_buckets": [],
              "unk_replacement": {"unk": 0}, "samples": [], "compared": compared(meta)}  # fmt: skip
    assert "| BLEU on lowercased text (the model's corpus is lowercased) |" in markdown(report)
