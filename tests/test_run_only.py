"""The keys a report pools over are those that cannot change what a run trains or reports
(``luong_lit.analysis.runs.RUN_ONLY``): each, changed on a tiny run, leaves its weights, its
stop and its pick of ``best.ckpt`` bit for bit as they were; every other key, the callbacks'
among them, names a recipe of its own."""

from __future__ import annotations

import pytest
import torch
from conftest import compose_cfg, tiny_overrides

from luong_lit.analysis.runs import RUN_ONLY, cell_of

#: each testable run-only key, and a value that differs from its default
CHANGED = {
    "callbacks.progress": "callbacks.progress.every_n_steps=1",
    "callbacks.throughput": "callbacks.throughput.every_n_steps=3",
    "callbacks.checkpoint": "callbacks.checkpoint.every_n_train_steps=2",
    "callbacks.signals": "callbacks.signals.dirpath=${paths.output_dir}/elsewhere",
    "callbacks.resumed_logs": "~callbacks.resumed_logs",
    "callbacks.attention_heatmaps": "callbacks.attention_heatmaps.every_n_epochs=1",
    "callbacks.epoch_checkpoints": "callbacks.epoch_checkpoints.keep_last=1",
    "callbacks.model_checkpoint.save_last": "callbacks.model_checkpoint.save_last=false",
    "callbacks.model_checkpoint.dirpath": "callbacks.model_checkpoint.dirpath=${paths.output_dir}/c",  # noqa: E501
    "callbacks.greedy_bleu.samples": "+callbacks.greedy_bleu.samples=1",
    "callbacks.beam_bleu.on_test": "callbacks.beam_bleu.on_test=false",
    "trainer.enable_progress_bar": "trainer.enable_progress_bar=true",
    "trainer.log_every_n_steps": "trainer.log_every_n_steps=1",
    "logger": "logger=csv",
    "data.num_workers": "data.num_workers=1",
    "test_after_training": "test_after_training=false",
    "ddp_timeout_s": "ddp_timeout_s=30",
    "checkpoint_writes": "checkpoint_writes=background",
}  # fmt: skip
#: run-only keys a run cannot be trained twice with otherwise in one test
UNTESTABLE = {"hydra", "ckpt_path", "overwrite"}


def trained(corpus, run, *extra: str) -> dict:
    """The weights, step and best checkpoint's step of a 2-epoch run with dropout."""
    from luong_lit.training.run import train

    args = [*tiny_overrides(corpus), "trainer.max_epochs=2", "dropout=0.3",
            "callbacks.early_stopping.patience=1", "callbacks.ema.decay=0.5", *extra]  # fmt: skip
    cfg = compose_cfg(args, run)
    train(cfg)
    folder = run / "checkpoints"
    best = folder / "best.ckpt"
    if not best.is_file():  # callbacks.model_checkpoint.dirpath moved it
        best = run / "c" / "best.ckpt"
    last = torch.load(folder / "last.ckpt", weights_only=True) if (folder / "last.ckpt").is_file() \
        else None  # fmt: skip
    b = torch.load(best, weights_only=True)
    return {"best": b["state_dict"], "best_step": b["global_step"],
            "last": None if last is None else last["current_model_state"]}  # fmt: skip


def test_the_list_is_the_tested_one():
    assert set(RUN_ONLY) == set(CHANGED) | UNTESTABLE


@pytest.fixture(scope="session")  # once a worker, however xdist deals the tests
def baseline(toy_corpus, tmp_path_factory):
    return trained(toy_corpus, tmp_path_factory.mktemp("baseline"))


@pytest.mark.parametrize("key", sorted(CHANGED))
def test_a_run_only_key_changes_no_weight(toy_corpus, tmp_path, baseline, key):
    got = trained(toy_corpus, tmp_path, CHANGED[key])
    assert got["best_step"] == baseline["best_step"]
    for name, value in baseline["best"].items():
        assert torch.equal(got["best"][name], value), (key, name)
    if got["last"] is not None:  # save_last=false keeps none
        for name, value in baseline["last"].items():
            assert torch.equal(got["last"][name], value), (key, name)


@pytest.mark.parametrize(
    "override",
    ["callbacks.ema.decay=0.9", "callbacks.early_stopping.patience=3",
     "callbacks.greedy_bleu.max_sentences=100", "callbacks.beam_bleu.beam=3",
     "callbacks.model_checkpoint.monitor=val/bleu", "select_by=bleu"],
)  # fmt: skip
def test_a_callbacks_key_that_changes_a_result_makes_its_own_cell(tmp_path, override):
    def cell(name, *overrides):
        (tmp_path / name / ".hydra").mkdir(parents=True)
        text = "".join(f"- {o}\n" for o in overrides)
        (tmp_path / name / ".hydra" / "overrides.yaml").write_text(text)
        return cell_of(tmp_path / name)

    plain = cell("a", "seed=1", "callbacks.progress.every_n_steps=5")
    assert cell("b", "seed=2", override) != plain and override in cell("c", "seed=3", override)
    run_only = ("threads=1", "logger=csv", "callbacks.checkpoint.every_n_minutes=5")
    assert cell("d", "seed=4", *run_only) == plain
