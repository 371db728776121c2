"""The maintained benchmarks run as ``python -m benchmarks.<name>`` and report what they claim."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import compose_cfg, tiny_overrides, write_corpus

from luong_lit.commands.train import train

REPO = Path(__file__).resolve().parents[1]


def run_module(name: str, *args: str, timeout: int = 300) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONWARNINGS": "ignore", "OMP_NUM_THREADS": "1"}
    return subprocess.run(
        [sys.executable, "-m", f"benchmarks.{name}", *args],
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
        )
    )
    assert (
        out["steps"] == 4
        and out["tokens"] > 4
        and out["tgt_tok_per_s"] == pytest.approx(out["tokens"] / out["seconds"])
    )


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
    from benchmarks.beam_speed import launches_of_one_batch
    from luong_lit.checkpoint import load_model
    from luong_lit.data.model_data import load_split
    from luong_lit.decoding.beam import BeamConfig
    from luong_lit.engines import make_engine

    net, src_vocab, tgt_vocab, meta = load_model(ckpt)
    src_ids = load_split(meta, "toy", src_vocab, tgt_vocab).split.src_ids
    stepper = make_engine("fast").for_decoding(net)
    got = launches_of_one_batch(stepper, src_ids, 4, BeamConfig(beam_size=3), tgt_vocab)
    launches = got["launches"]  # on a CPU the profile holds no CUDA launch
    assert launches["kernel_launches"] == 0 and launches["gpu_busy_share"] == 0.0
    assert launches["decoder_steps"] >= 1


def test_startup_times_a_run_to_its_first_batch(toy_corpus):
    out = last_json(run_module("startup", "--rounds", "1", *tiny_overrides(toy_corpus)))
    assert len(out["seconds"]) == 1 and out["seconds"][0] > 0
    bad = run_module(
        "startup", "--rounds", "1", "data.batch_size=0", *tiny_overrides(toy_corpus)[:5]
    )
    assert bad.returncode != 0 and "did not start" in bad.stderr


def test_sweep_wall_counts_the_jobs_that_overlap_on_each_device():
    import random

    from benchmarks.sweep_wall import most_at_once

    rng = random.Random(0)
    for _ in range(50):
        jobs = []
        for _ in range(rng.randrange(1, 7)):
            start = rng.randrange(0, 20)
            jobs.append(
                {"device": rng.choice("ab"), "start_s": start, "end_s": start + rng.randrange(1, 8)}
            )
        for dev, most in most_at_once(jobs).items():
            mine = [j for j in jobs if j["device"] == dev]
            by_second = max(sum(j["start_s"] <= t < j["end_s"] for j in mine) for t in range(0, 30))
            assert most == by_second


def test_bucket_padding_counts_decoder_steps_and_positions_of_both_shapes():
    from benchmarks.bucket_padding import Tally
    from luong_lit.data.batching import collate

    def batch(src_len: int, tgt_len: int, rows: int = 2):
        return collate([(i, [5] * src_len, [6] * tgt_len) for i in range(rows)])

    batches = [batch(9, 3), batch(3, 9), batch(30, 2)]  # own target steps: 4, 10, 3
    square, pair = Tally([4, 8, 16], 4, True), Tally([4, 8, 16], 4, False)
    for b in batches:
        square.add(b)
        pair.add(b)
    sq, pr = square.report(), pair.report()
    assert sq["own_shape_batches"] == pr["own_shape_batches"] == 1  # 30 fits no bucket
    assert sq["decoder_steps_vs_own"] == round((16 + 16 + 3) / 17, 3)  # square: 9 -> 16
    assert pr["decoder_steps_vs_own"] == round((4 + 16 + 3) / 17, 3)  # pair: 4 for (9, 3)
    tokens = 2 * (4 + 10 + 3)  # words and </s>
    assert pr["real_target_share"] == round(tokens / (4 * 4 + 4 * 16 + 2 * 3), 3)
    assert (sq["graphs"], pr["graphs"]) == (1, 2)
