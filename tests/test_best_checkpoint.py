"""``last.ckpt`` is the last finished state after every validation and at the end of training,
whatever the monitored metric did; ``best.ckpt`` stays the best (``BestCheckpoint``)."""

from __future__ import annotations

import csv

import torch
from conftest import fit_toy

# ``mode=max`` on a perplexity: every validation after the first is "worse", on purpose
WORSE = ["callbacks.model_checkpoint.mode=max", "logger=csv"]


def ckpt(path):
    return torch.load(path, map_location="cpu", weights_only=True)


def validations(run) -> list[tuple[int, float]]:
    """``(step, val/ppl)`` of each validation the run logged."""
    with open(run / "csv" / "metrics.csv", newline="") as fh:
        return [
            (int(r["step"]), float(r["val/ppl"])) for r in csv.DictReader(fh) if r.get("val/ppl")
        ]


def val_steps(run):
    return [step for step, _ in validations(run)]


def test_last_ckpt_is_the_last_step_after_validations_that_do_not_improve(toy_corpus, tmp_path):
    folder = fit_toy(tmp_path, toy_corpus, 3, WORSE)
    last, best = ckpt(folder / "last.ckpt"), ckpt(folder / "best.ckpt")
    steps = val_steps(tmp_path)
    assert len(steps) == 3 and steps[0] < steps[-1]
    # the metric got "worse" after the first validation: best stays there, last moves on
    assert last["epoch"] == 2 and last["global_step"] == steps[-1] + 1
    assert best["global_step"] == steps[0] + 1
    key = next(k for k in last["callbacks"] if k.startswith("ModelCheckpoint{'monitor': 'val/ppl'"))
    # last.ckpt keeps the best score of every validation so far, the last one's included
    assert float(last["callbacks"][key]["best_model_score"]) == max(
        v for _, v in validations(tmp_path)
    )
    assert float(best["callbacks"][key]["best_model_score"]) == max(
        v for _, v in validations(tmp_path)
    )


def test_last_ckpt_after_a_worse_validation_in_the_middle_of_an_epoch(toy_corpus, tmp_path):
    """Two validations an epoch: the last one, at the end of the run, is not the best, and
    ``last.ckpt`` still holds the run's final step."""
    folder = fit_toy(tmp_path, toy_corpus, 2, [*WORSE, "trainer.val_check_interval=0.5"])
    seen = validations(tmp_path)
    top = max(range(len(seen)), key=lambda i: seen[i][1])  # the "best" under mode=max
    assert len(seen) == 4 and top < 3  # the last validation is not the best
    assert ckpt(folder / "last.ckpt")["global_step"] == seen[-1][0] + 1
    assert ckpt(folder / "best.ckpt")["global_step"] == seen[top][0] + 1


def test_last_ckpt_is_written_at_the_end_when_max_steps_stops_mid_epoch(toy_corpus, tmp_path):
    folder = fit_toy(tmp_path, toy_corpus, 3, ["trainer.max_steps=7"])
    assert ckpt(folder / "last.ckpt")["global_step"] == 7


def test_last_ckpt_every_epoch_without_validation(toy_corpus, tmp_path):
    folder = fit_toy(tmp_path, toy_corpus, 2, ["trainer.check_val_every_n_epoch=5"])
    last = ckpt(folder / "last.ckpt")
    assert last["epoch"] == 1 and not (folder / "best.ckpt").exists()
