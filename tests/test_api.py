"""The Python API, ``luong_lit.load(...)``: the README's example runs, and each method gives what
the command of the same job gives (translate, n-best, align) or what the model's own scores are
(``score`` against the forced pass, ``attention`` against ``align``)."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest
import torch
from conftest import run_here

import luong_lit
from luong_lit.errors import UsageError

REPO = Path(__file__).resolve().parents[1]
LINES = ["A B C D", "", "E F G", "a c e g i"]


def readme_python_example() -> str:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text.split("## From Python", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


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
    assert len(out.getvalue().splitlines()) >= 4


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


def test_options_are_typed_and_checked_by_name(lowercase_model):
    with pytest.raises(UsageError, match="^beam must be an integer >= 1, got 0"):
        luong_lit.load(lowercase_model, beam=0)
    with pytest.raises(UsageError, match="int8 is a form of the fast engine"):
        luong_lit.load(lowercase_model, engine="reference", int8="output")
    with pytest.raises(UsageError, match="^unknown option 'beam_size'; load options: .*beam"):
        luong_lit.load(lowercase_model, beam_size=5)
    with pytest.raises(UsageError, match="n_best 4 needs a beam of at least 4"):
        luong_lit.load(lowercase_model, beam=2).n_best(["A B"], 4)
