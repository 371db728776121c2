"""Sampling, target prefixes and scoring through the Python API, the commands and the server:
the same results at each door, and bad values refused in one line that names the option."""

from __future__ import annotations

import json

import pytest
from conftest import run_here
from serve_helpers import load, post

import luong_lit
from luong_lit.errors import UsageError, UserError

LINES = ["A B C D", "", "E F G", "a c e g i"]


# ------------------------------------------------------------------------ sampling
def test_sampling_at_its_limits_is_greedy_search_and_a_seed_reproduces_it(lowercase_model):
    model = luong_lit.load(lowercase_model)
    greedy = model.translate(LINES, beam=1)
    assert model.translate(LINES, sampling=True, temperature=1e-6) == greedy
    assert model.translate(LINES, sampling=True, top_k=1, temperature=2.0) == greedy
    drawn = model.n_best(LINES, 3, sampling=True, top_p=0.95, seed=4)
    assert drawn == model.n_best(LINES, 3, sampling=True, top_p=0.95, seed=4)
    assert drawn != model.n_best(LINES, 3, sampling=True, top_p=0.95, seed=5)
    assert [len(x) for x in drawn] == [3] * len(LINES) and drawn[1] == [("", 0.0)] * 3


def test_the_command_samples_as_the_api_does(lowercase_model):
    args = ["--sampling", "--seed", "4", "--top-p", "0.9", "--n-best", "2"]
    res = run_here(["translate", str(lowercase_model), "--quiet", *args], "\n".join(LINES).encode())
    assert res.returncode == 0, res.stderr
    want = luong_lit.load(lowercase_model).n_best(LINES, 2, sampling=True, seed=4, top_p=0.9)
    lines = [f"{i} ||| {h.text} ||| {h.score or 0.0:.4f}" for i, x in enumerate(want) for h in x]
    assert res.stdout.decode().splitlines() == lines


@pytest.mark.parametrize(
    "options, says",
    [
        ({"sampling": True, "top_p": 1.5}, r"^top_p must be in \(0, 1\], got 1.5$"),
        ({"sampling": True, "top_p": 0}, r"^top_p must be in \(0, 1\], got 0$"),
        ({"sampling": True, "temperature": 0.0}, r"^temperature must be above 0, got 0.0$"),
        ({"top_k": 5}, r"^top_k shapes sampling: add sampling$"),
        ({"sampling": True, "authors_decoder": True}, r"^authors_decoder is for beam search"),
    ],
)
def test_bad_sampling_options_are_refused_by_name(lowercase_model, options, says):
    with pytest.raises(UsageError, match=says):
        luong_lit.load(lowercase_model).translate(["A B"], **options)


def test_the_command_names_a_bad_option_by_its_flag(lowercase_model, tmp_path):
    ckpt = str(lowercase_model)
    for args, says in (
        (["--sampling", "--top-p", "0"], "error: --top-p must be in (0, 1], got 0.0"),
        (["--sampling", "--temperature", "-1"], "error: --temperature must be above 0, got -1.0"),
        (["--top-k", "3"], "error: --top-k shapes sampling: add --sampling"),
    ):
        res = run_here(["translate", ckpt, "--quiet", *args], b"A B\n")
        assert res.returncode == 2 and res.stderr.decode() == says + "\n"
    (tmp_path / "prefix.txt").write_text("a b c d e f g h i j\n", encoding="utf-8")
    res = run_here(["translate", ckpt, "--prefix", str(tmp_path / "prefix.txt")], b"A\n")
    assert res.returncode == 2 and res.stderr.decode().startswith(
        "error: the --prefix of line 1 has 10 tokens, more than the 6 that the translation of "
        "its 1-token source may have (raise --max-len-ratio)"
    )


# ------------------------------------------------------------------------ prefixes
def test_a_prefix_is_kept_verbatim_in_every_search(lowercase_model):
    model = luong_lit.load(lowercase_model, pretokenized=True)
    prefix = ["A B", None, "C", "Zed  x"]  # words of the model's vocabulary, and others
    for search in ({"beam": 1}, {"beam": 3}, {"sampling": True, "seed": 1}):
        out = model.translate(LINES, prefix=prefix, **search)
        assert out[0].startswith("A B ") and out[2].startswith("C ") and out[1] == ""
        assert out[3].startswith("Zed  x")  # as given, the unknown words too
    assert all(h.text.startswith("A B") for h in model.n_best(LINES, 2, prefix=prefix)[0])
    drawn = model.n_best(["A B C D"], 2, prefix="A B", sampling=True, seed=2)[0]
    scores = model.score(["A B C D"] * 2, [h.text for h in drawn])  # the prefix's words too
    assert [h.score for h in drawn] == pytest.approx(scores, rel=1e-5)


def test_the_command_continues_prefixes_as_the_api_does(lowercase_model, tmp_path):
    prefix = ["x", "", "", "y z"]
    (tmp_path / "prefix.txt").write_text("\n".join(prefix) + "\n", encoding="utf-8")
    args = ["--beam", "3", "--prefix", str(tmp_path / "prefix.txt")]
    res = run_here(["translate", str(lowercase_model), "--quiet", *args], "\n".join(LINES).encode())
    assert res.returncode == 0, res.stderr
    want = luong_lit.load(lowercase_model, beam=3).translate(LINES, prefix=prefix)
    assert res.stdout.decode().splitlines() == want and want[3].startswith("y z ")
    res = run_here(["translate", str(lowercase_model), *args], b"A B\n")
    assert res.returncode == 2 and "has 4 lines but the input has 1" in res.stderr.decode()


# ------------------------------------------------------------------------ scoring
def test_the_score_command_prints_the_apis_scores(lowercase_model, tmp_path):
    src, tgt = ["A B C", "D E", "a b"], ["A B C", "E D F", ""]
    for name, lines in (("src", src), ("tgt", tgt)):
        (tmp_path / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    files = ["--src", str(tmp_path / "src"), "--tgt", str(tmp_path / "tgt")]
    model = luong_lit.load(lowercase_model)
    res = run_here(["score", str(lowercase_model), *files])
    assert res.returncode == 0, res.stderr
    assert res.stdout.decode().splitlines() == [f"{x:.4f}" for x in model.score(src, tgt)]
    pairs = "".join(f"{s}\t{t}\n" for s, t in zip(src, tgt)).encode()
    tokens = run_here(["score", str(lowercase_model), "--tokens"], pairs)
    assert tokens.returncode == 0, tokens.stderr
    for line, want in zip(tokens.stdout.decode().splitlines(), model.token_scores(src, tgt)):
        score, words, logprobs = line.split("\t")
        assert score == f"{want.score:.4f}" and words.split() == want.tokens
        assert words.split()[-1] == "</s>" and len(logprobs.split()) == len(want.tokens)
        assert sum(map(float, logprobs.split())) == pytest.approx(want.score, abs=1e-3)
    res = run_here(["score", str(lowercase_model)], b"A B\n")
    assert res.returncode == 2
    assert res.stderr.decode() == (
        "error: <stdin>:1: expected source<TAB>target, got 1 tab-separated fields\n"
    )


# ------------------------------------------------------------------------ the server
def test_the_server_samples_and_continues_prefixes_as_the_api_does(lowercase_model, server):
    _, port, _ = server
    text = ["A B C", "D E"]
    body = {"text": text, "sampling": True, "seed": 3, "top_k": 5, "n_best": 2}
    status, answer = post(port, json.dumps(body).encode())
    want = load(lowercase_model).n_best(text, 2, sampling=True, seed=3, top_k=5)
    assert status == 200
    assert [[h["text"] for h in x] for x in answer["translations"]] == [
        [h.text for h in x] for x in want
    ]
    status, answer = post(port, json.dumps({"text": text, "prefix": ["x", None]}).encode())
    assert status == 200
    assert answer["translations"] == load(lowercase_model).translate(text, prefix=["x", None])
    for bad, says in (
        ({"sampling": True, "top_p": 2}, "top_p must be in (0, 1], got 2"),
        ({"prefix": "a b c d e f g h i j"}, "the prefix of line 1 has 10 tokens"),
        ({"prefix": 5}, '"prefix" must be like "text"'),
        ({"seed": 3}, "seed seeds sampling's draws: add sampling"),
    ):
        status, answer = post(port, json.dumps({"text": "A B", **bad}).encode())
        assert status == 400 and answer["error"].startswith(says), answer


def test_a_seed_without_sampling_is_refused_as_top_p_is(lowercase_model):
    res = run_here(["translate", str(lowercase_model), "--seed", "1", "--quiet"], b"A B\n")
    err = res.stderr.decode()
    assert res.returncode == 2 and "--seed seeds sampling's draws: add --sampling" in err, err
    with pytest.raises(UserError, match="seed seeds sampling's draws: add sampling"):
        load(lowercase_model).translate(["A B"], seed=1)
    with pytest.raises(UserError, match="seed seeds sampling's draws"):
        load(lowercase_model, seed=1)


def test_prefix_takes_a_file_and_prefix_text_the_text(lowercase_model):
    res = run_here(["translate", str(lowercase_model), "--prefix", "Zwei Hunde", "--quiet"],
                   b"A B\n")  # fmt: skip
    err = res.stderr.decode()
    assert res.returncode == 2 and "--prefix takes a file" in err and "--prefix-text" in err, err
    res = run_here(["translate", str(lowercase_model), "--prefix-text", "x", "--quiet"],
                   b"A B\nC D\n")  # fmt: skip
    assert res.returncode == 0, res.stderr.decode()
    want = luong_lit.load(lowercase_model).translate(["A B", "C D"], prefix=["x", "x"])
    assert res.stdout.decode().splitlines() == want
