"""The maintained benchmarks run as ``python -m scripts.benchmarks.<name>`` and report what they
claim.

Each is run as a user runs it, in a subprocess (the tests never import ``scripts``), and its
JSON is checked against what the test counts itself."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import compose_cfg, needs_mirror, tiny_overrides, write_corpus

from luong_lit.training.run import train

REPO = Path(__file__).resolve().parents[1]


def run_module(name: str, *args: str, timeout: int = 300) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONWARNINGS": "ignore", "OMP_NUM_THREADS": "1"}
    return subprocess.run(
        [sys.executable, "-m", f"scripts.benchmarks.{name}", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def window_overrides(corpus) -> list[str]:
    """The tiny run's overrides; the window runs without callbacks."""
    return [o for o in tiny_overrides(corpus) if not o.startswith("callbacks.")]


def last_json(res: subprocess.CompletedProcess) -> dict:
    assert res.returncode == 0, res.stderr[-2000:]
    return json.loads(res.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("engine", ["fast", "reference"])
def test_training_window_counts_the_tokens_of_its_steps(toy_corpus, engine):
    out = last_json(
        run_module(
            "ours_window",
            "--steps",
            "4",
            "--warmup",
            "2",
            *window_overrides(toy_corpus),
            f"engine={engine}",
            "trainer.max_epochs=${luong_lit.paper_epochs:0.0}",  # the recipes' resolvers known
        )
    )
    assert (
        out["steps"] == 4
        and out["tokens"] > 4
        and out["tgt_tok_per_s"] == pytest.approx(out["tokens"] / out["seconds"])
    )


@pytest.mark.long  # a benchmark run as a user does; the kit's own tests cover what it times
def test_plain_training_window_equals_the_trainer_in_tokens(toy_corpus):
    args = ["--steps", "3", "--warmup", "1", *window_overrides(toy_corpus)]
    assert (
        last_json(run_module("ours_window", "--plain", *args))["tokens"]
        == last_json(run_module("ours_window", *args))["tokens"]
    )


def test_step_profile_reports_a_step_time():
    res = run_module("step_profile", "--hidden", "32", "--attention", "local_p")
    assert res.returncode == 0, res.stderr[-2000:]
    assert "ms/step" in res.stdout and "target tokens/s" in res.stdout


@pytest.mark.long  # a benchmark run as a user does; the kit's own tests cover what it times
def test_beam_speed_decodes_a_test_set(toy_corpus, tmp_path):
    test = write_corpus(tmp_path / "data", "test", 12, 4)
    cfg = compose_cfg(
        tiny_overrides(toy_corpus)
        + [
            "trainer.max_epochs=1",
            "test_after_training=false",
            f"+data.test.toy.src={test['src']}",
            f"+data.test.toy.tgt={test['tgt']}",
        ],
        tmp_path,
    )
    train(cfg)
    ckpt = str(tmp_path / "checkpoints" / "last.ckpt")
    out = last_json(
        run_module(
            "beam_speed",
            ckpt,
            "--test",
            "toy",
            "--beam",
            "3",
            "--single-limit",
            "4",
            "--threads",
            "1",
        )
    )
    assert out["sentences"] == 12 and out["batched_sent_per_s"] > 0 and out["single_sent_per_s"] > 0
    int8 = last_json(
        run_module("beam_speed", ckpt, "--test", "toy", "--single-limit", "0", "--int8", "all")
    )
    assert int8["int8"] == "all" and "single_sent_per_s" not in int8
    lines = {}
    for way in ("plain", "fixed"):
        flags = ["--fixed"] if way == "fixed" else []
        found = last_json(run_module("beam_speed", ckpt, "--test", "toy", "--single-limit", "0",
                                     "--output", str(tmp_path / way), *flags))  # fmt: skip
        assert found["search"] == ("fixed_beam_search" if flags else "beam_search")  # what ran
        lines[way] = (tmp_path / way).read_text(encoding="utf-8")
    assert lines["fixed"] == lines["plain"] and lines["plain"]  # the same translations
    profiled = last_json(
        run_module("beam_speed", ckpt, "--test", "toy", "--single-limit", "0", "--launches")
    )["launches"]
    assert profiled["kernel_launches"] == 0 and profiled["gpu_busy_share"] == 0.0  # a CPU
    assert profiled["decoder_steps"] >= 2  # the longest output of the first batch, and </s>


@pytest.mark.long  # a benchmark run as a user does; the kit's own tests cover what it times
def test_startup_times_a_run_to_its_first_batch(toy_corpus):
    out = last_json(run_module("startup", "--rounds", "1", *tiny_overrides(toy_corpus)))
    assert len(out["seconds"]) == 1 and out["seconds"][0] > 0
    bad = run_module(
        "startup", "--rounds", "1", "data.batch_size=0", *tiny_overrides(toy_corpus)[:5]
    )
    assert bad.returncode != 0 and "did not start" in bad.stderr


def test_bucket_padding_counts_decoder_steps_and_positions_of_both_shapes(toy_corpus):
    """The benchmark's counts over one epoch equal a count made here, batch by batch."""
    from luong_lit.config import compose
    from luong_lit.data.loading.buckets import bucket_shape
    from luong_lit.data.loading.datamodule import TranslationDataModule

    overrides = window_overrides(toy_corpus)
    res = run_module("bucket_padding", "--buckets", "4,6,9", *overrides)
    assert res.returncode == 0, res.stderr[-2000:]
    reports = [json.loads(line) for line in res.stdout.splitlines() if line.startswith("{")]
    cfg = compose(overrides)
    dm = TranslationDataModule(**{k: v for k, v in cfg.data.items() if not k.startswith("_")})
    dm.setup("fit")
    batches, rows = list(dm.train_dataloader()), int(cfg.engine.rows)
    own = sum(b.tgt_in.size(1) for b in batches)
    tokens = sum(int((b.tgt_out != 0).sum()) for b in batches)
    for report in reports:
        square = report["shapes"] == "square"
        shapes = [bucket_shape(b, rows, [4, 6, 9], square) for b in batches]
        steps = sum(s[2] if s else b.tgt_in.size(1) for s, b in zip(shapes, batches))
        positions = sum(s[0] * s[2] if s else b.tgt_out.numel() for s, b in zip(shapes, batches))
        assert report["decoder_steps_vs_own"] == round(steps / own, 3)
        assert report["real_target_share"] == round(tokens / positions, 3)
        assert report["graphs"] == len({s for s in shapes if s})
        assert report["own_shape_batches"] == shapes.count(None)
        assert report["batches"] == len(batches)
    assert [r["shapes"] for r in reports] == ["square", "pair"]
    assert reports[1]["decoder_steps_vs_own"] <= reports[0]["decoder_steps_vs_own"]


@pytest.mark.parametrize("name, args", [("ddp_balance", ()), ("scale", ("corpus", "--out"))])
def test_a_benchmark_that_reads_the_mirror_says_so_in_one_line_without_one(
    name, args, tmp_path, monkeypatch
):
    """Without ``LUONG_LIT_DATA``: exit 2 and one line naming the script and the variable."""
    monkeypatch.delenv("LUONG_LIT_DATA", raising=False)
    res = run_module(name, *args, *((str(tmp_path),) if args else ()))
    lines = res.stderr.strip().splitlines()
    assert res.returncode == 2 and len(lines) == 1, res.stderr[-2000:]
    assert f"scripts.benchmarks.{name}" in lines[0] and "LUONG_LIT_DATA" in lines[0]


@needs_mirror
def test_ddp_balance_says_the_grouped_steps_keep_the_ranks_busier():
    res = run_module("ddp_balance", "--ranks", "2", "4", "--sentences", "20000")
    assert res.returncode == 0, res.stderr[-2000:]
    lines = [json.loads(x) for x in res.stdout.splitlines() if x.startswith("{")]
    assert [x["ranks"] for x in lines] == [2, 4]
    for x in lines:
        assert 0 < x["random"] < x["grouped"] <= 1 and x["steps"] == 20000 // 128 // x["ranks"]


def test_dev_scores_reports_the_same_figures_each_way(tmp_path):
    hyp, ref = tmp_path / "hyp", tmp_path / "ref"
    hyp.write_text("a dog runs .\ntwo men ##AT##-##AT## play\n\n", encoding="utf-8")
    ref.write_text("a dog is running .\ntwo men play football\na child\n", encoding="utf-8")
    res = run_module("dev_scores", str(hyp), str(ref), "--repeats", "2")
    assert res.returncode == 0, res.stderr[-2000:]
    out = json.loads(res.stdout)
    assert out["same_figures"] is True and out["sentences"] == 3
    ways = {"bleu", "chrf_chrfpp_ter_three_calls", "chrf_chrfpp_ter_kit", "ter"}
    assert set(out) == ways | {"same_figures", "sentences"}  # each way timed, as seconds
    assert all(isinstance(out[k], float) for k in ways)
