"""``luong_lit.translator``, the Python API: ``luong_lit.load`` and its options, translations and
n-best lists as the command writes them, scores, attention, text in and out."""

from __future__ import annotations

import contextlib
import io
import os
import re
import subprocess
import sys

import pytest
import torch
from conftest import REPO, compose_cfg, run_here, tiny_overrides, translate_lines

import luong_lit
from luong_lit.data.text.preprocess import Preprocessing
from luong_lit.data.text.recase import Recaser
from luong_lit.errors import UsageError
from luong_lit.training.run import train

LINES = ["A B C D", "", "E F G", "a c e g i"]


def readme_python_example() -> str:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text.split("## From Python", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_raw_input_translates_as_its_pretokenised_form_then_recased(lowercase_model):
    raw = ["A B C D.", "E, F G!", "H I J"]
    pre = [" ".join(Preprocessing(lowercase=True, moses=True).apply(x, "en")) for x in raw]
    plain = translate_lines(lowercase_model, "\n".join(pre) + "\n", "--pretokenized")
    natural = translate_lines(lowercase_model, "\n".join(raw) + "\n")
    recaser = Recaser({"b": "B"})
    from luong_lit.data.text.tokenize import MosesTokenizer

    detok = MosesTokenizer("de")
    want = [detok.detokenize(recaser(p.split())) if p else "" for p in plain]
    assert natural == want
    assert all(" b " not in f" {line} " for line in natural)  # recased


def test_the_readme_example_runs(lowercase_model):
    code = readme_python_example()
    assert "luong_lit.load(" in code
    code = code.replace("logs/train/runs/RUN/checkpoints/best.ckpt", str(lowercase_model))
    code = code.replace("A man is riding a bike.", "A B C").replace(
        "Ein Mann fährt Fahrrad.", "A B C"
    )
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md", "exec"), {})
    printed = out.getvalue().splitlines()
    model = luong_lit.load(lowercase_model, beam=5, replace_unk=True)  # as the example loads it
    translations = model.translate(["A B C", "Two dogs play in the snow."])
    assert printed[0] == str(translations)  # the example's first print, recomputed
    n_best = model.n_best(["A B C"], 3)[0]
    assert printed[1:4] == [f"{h.score:7.2f}  {h.text}" for h in n_best]
    assert printed[-1] == str(model.align(["A B C"], ["A B C"]))


def test_translate_and_n_best_give_what_the_command_writes(lowercase_model, tmp_path):
    model = luong_lit.load(lowercase_model, beam=3)
    (tmp_path / "in.txt").write_text("\n".join(LINES) + "\n", encoding="utf-8")
    files = ["-i", str(tmp_path / "in.txt"), "-o", str(tmp_path / "out.txt")]
    res = run_here(["translate", str(lowercase_model), "--beam", "3", "--quiet", *files])
    assert res.returncode == 0, res.stderr
    written = (tmp_path / "out.txt").read_text(encoding="utf-8").splitlines()
    assert model.translate(LINES) == written and written[1] == ""
    lists = model.n_best(LINES, 3)
    assert [len(x) for x in lists] == [3, 3, 3, 3]
    for hyps, best in zip(lists, written):
        if best:
            assert hyps[0].text == best
            assert [h.score for h in hyps] == sorted((h.score for h in hyps), reverse=True)
    assert lists[1] == [("", 0.0)] * 3  # an empty line: n empty translations


def test_score_is_the_log_probability_of_the_forced_pass(lowercase_model):
    from luong_lit.data.loading.batching import collate
    from luong_lit.metrics.perplexity import stepwise_nll

    model = luong_lit.load(lowercase_model, engine="reference")
    src, tgt = ["A B C", "D E"], ["A B C", "E D F"]
    scores = model.score(src, tgt)
    for s, t, got in zip(src, tgt, scores):
        ids = (model.src_vocab.encode(s.lower().split()), model.tgt_vocab.encode(t.lower().split()))
        nll, _ = stepwise_nll(model.model, collate([(0, *ids)]))
        assert got == pytest.approx(-nll, rel=1e-5)
    assert luong_lit.load(lowercase_model).score(src, tgt) == pytest.approx(scores, rel=1e-5)


def test_attention_of_the_best_translation(lowercase_model):
    model = luong_lit.load(lowercase_model, beam=2)
    att = model.attention("A B C D")
    assert model.translate(["A B C D"])[0]  # a translation to look at
    assert att.target[-1] == "</s>" and att.source == ["A", "B", "C", "D", "</s>"]  # as typed
    weights = torch.tensor(att.weights)
    assert weights.shape == (len(att.target), len(att.source))
    assert torch.all(weights >= 0) and torch.allclose(weights.sum(1), torch.ones(len(att.target)))
    assert att.p_t is None and att.D is None  # global attention: no window
    assert sorted(j for _, j in att.links) == list(range(len(att.target) - 1))
    assert att.links == model.align(["A B C D"], [model.translate(["A B C D"])[0]])[0]


def test_attention_of_an_empty_text_is_empty(lowercase_model):
    model = luong_lit.load(lowercase_model)
    att = model.attention("")
    assert (att.source, att.target, att.weights, att.links) == ([], [], [], [])
    assert model.translate([""]) == [""]


def test_an_unset_batch_size_is_the_devices_own_and_a_set_one_is_kept(lowercase_model):
    """On a CPU a model decodes 64 sentences together unless told otherwise; on a GPU a test set
    in few batches (1,000); a batch size given is the one used, and translations do not depend
    on it."""
    from luong_lit.decoding.corpus import DEVICE_BATCH, batch_size_for

    assert luong_lit.load(lowercase_model).batch_size == 64
    assert luong_lit.load(lowercase_model, batch_size=3).batch_size == 3
    assert batch_size_for("cuda") == batch_size_for(torch.device("cuda", 1)) == DEVICE_BATCH
    assert batch_size_for("cuda", 7) == 7 == batch_size_for("cpu", 7, cpu=128)
    assert batch_size_for("cuda", beam=12) == 416 < DEVICE_BATCH  # at most 5,000 rows a step
    assert batch_size_for("cpu", cpu=128) == 128
    lines = ["A B C D", "D E", "A", "B C D E A"]
    one = luong_lit.load(lowercase_model, beam=3, batch_size=1).translate(lines)
    assert luong_lit.load(lowercase_model, beam=3).translate(lines) == one
    with pytest.raises(UsageError, match="^batch_size must be an integer >= 1, got 0"):
        luong_lit.load(lowercase_model, batch_size=0)


def test_options_are_typed_and_checked_by_name(lowercase_model):
    with pytest.raises(UsageError, match="^beam must be an integer >= 1, got 0"):
        luong_lit.load(lowercase_model, beam=0)
    with pytest.raises(UsageError, match="int8 is a form of the fast engine"):
        luong_lit.load(lowercase_model, engine="reference", int8="output")
    known = "^beam_size is not an option of load; its options: checkpoints, .*beam"
    with pytest.raises(UsageError, match=known):
        luong_lit.load(lowercase_model, beam_size=5)
    with pytest.raises(UsageError, match="n_best 4 needs a beam of at least 4"):
        luong_lit.load(lowercase_model, beam=2).n_best(["A B"], 4)
    with pytest.raises(UsageError, match="^cuda_graphs captures beam search on a CUDA GPU, and "
                       "device is cpu"):  # fmt: skip
        luong_lit.load(lowercase_model, cuda_graphs=True)


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


def test_shown_attention_and_n_best_lists_show_the_words_the_user_sees(
    lowercase_model, monkeypatch
):
    """Unknown words replaced and copied as typed, Moses escapes undone: in the one best, in
    every hypothesis of an n-best list, and in ``--show-attention``'s ``word→source`` line."""
    import luong_lit.inference as inference_module
    import luong_lit.translator as api
    from luong_lit.data.vocab import UNK_ID
    from luong_lit.decoding.search import Hypothesis

    plain = luong_lit.load(lowercase_model, beam=3, replace_unk=True)
    escaped = Preprocessing(**{**plain.meta.preprocess.to_dict(), "escape": True})
    meta = plain.meta.replace(preprocess=escaped)
    tr = api.Translator(
        plain.model, plain.src_vocab, plain.tgt_vocab, meta, plain.options, plain.defaults
    )
    typed = '"Mary" b'  # tokens: &quot; mary &quot; b; the model knows only b
    assert tr.text.source(typed).tokens == ["&quot;", "mary", "&quot;", "b"]
    ids = [UNK_ID, UNK_ID, tr.tgt_vocab.stoi["B"]]  # the toy targets are upper-case
    rows = torch.zeros(4, 4)  # footnote 14: word i takes step i + 1's a_t
    rows[1, 0] = rows[2, 1] = rows[3, 3] = rows[0, 0] = 1.0
    hyps = [Hypothesis(ids, -1.0, rows), Hypothesis(ids, -2.0, rows)]

    def decoded(stepper, src_ids, **options):
        return [hyps for _ in src_ids]

    monkeypatch.setattr(inference_module, "decode_corpus", decoded)
    one = tr.run([typed], attention=True)[0]
    two = tr.run([typed], tr.search_options(n_best=2))[0]
    assert "Mary" in one.text and all("Mary" in h.text for h in two.hypotheses)  # as typed
    assert "&quot;" not in one.text and "<unk>" not in one.text
    pairs = [x.split("→") for x in one.attention.arrows().split()]
    assert [w for w, _ in pairs] == ['"', "Mary", "B"]  # not <unk>, &quot; or mary
    assert all(src in ['"', "Mary", "b"] for _, src in pairs)  # the source words as typed
    assert one.attention.source == ['"', "Mary", '"', "b", "</s>"]  # the model reads </s>
    assert one.attention.replaced == {0: 0, 1: 1}
