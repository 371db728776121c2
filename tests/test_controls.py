"""The controls a user of OpenNMT-py, Joey NMT or fairseq reaches for: choosing and stopping on
a dev metric (``select_by``, early stopping), fine-tuning from a checkpoint (``init_from``,
``freeze``)."""

from __future__ import annotations

import pytest
import torch
from conftest import compose_cfg, run_here, tiny_overrides, write_corpus

from luong_lit.errors import UserError


def ckpt(path):
    return torch.load(path, map_location="cpu", weights_only=True)


def fit(corpus, run, *extra: str) -> None:
    from luong_lit.training.run import train

    train(compose_cfg([*tiny_overrides(corpus), "test_after_training=false", *extra], run))


def best_score(c) -> float:
    """The dev perplexity ``best.ckpt`` was chosen by, as a checkpoint keeps it."""
    key = next(k for k in c["callbacks"] if k.startswith("ModelCheckpoint{'monitor': 'val/ppl'"))
    return float(c["callbacks"][key]["best_model_score"])


def early_state(c) -> dict:
    return next(v for k, v in c["callbacks"].items() if k.startswith("EarlyStopping"))


# ------------------------------------------------------------------ choose and stop on dev
# the learning rate 0 keeps every dev figure the same: no validation after the first improves
FLAT = ["model.optimizer.lr=0", "trainer.max_epochs=10"]


def test_early_stopping_stops_after_patience_validations_without_improvement(toy_corpus, tmp_path):
    fit(toy_corpus, tmp_path, *FLAT, "callbacks.early_stopping.patience=2")
    last = ckpt(tmp_path / "checkpoints" / "last.ckpt")
    assert last["epoch"] == 2  # epochs 2 and 3 did not improve on epoch 1: stop after 3
    assert early_state(last)["wait_count"] == 2


def test_a_resumed_run_keeps_the_patience_counter(toy_corpus, tmp_path):
    fit(
        toy_corpus,
        tmp_path,
        *FLAT[:1],
        "trainer.max_epochs=2",
        "callbacks.early_stopping.patience=3",
    )
    assert early_state(ckpt(tmp_path / "checkpoints" / "last.ckpt"))["wait_count"] == 1
    fit(toy_corpus, tmp_path, *FLAT, "callbacks.early_stopping.patience=3", "ckpt_path=last")
    assert ckpt(tmp_path / "checkpoints" / "last.ckpt")["epoch"] == 3  # as an unbroken run


def test_early_stopping_is_off_by_default(toy_corpus, tmp_path):
    fit(toy_corpus, tmp_path, *FLAT[:1], "trainer.max_epochs=4")
    assert ckpt(tmp_path / "checkpoints" / "last.ckpt")["epoch"] == 3


def test_select_by_sets_the_monitored_metric_and_its_direction(toy_corpus, tmp_path):
    for name, mode in (("ppl", "min"), ("bleu", "max"), ("chrf", "max")):
        cfg = compose_cfg([*tiny_overrides(toy_corpus), f"select_by={name}"], tmp_path)
        for cb in ("model_checkpoint", "early_stopping"):
            assert cfg.callbacks[cb].monitor == f"val/{name}" and cfg.callbacks[cb].mode == mode
        assert cfg.model.scheduler.get("monitor", f"val/{name}") == f"val/{name}"


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["select_by=blue"], "select_by=blue is not a dev metric a run logs"),
        (["callbacks.model_checkpoint.monitor=val/blue"],
         "callbacks.model_checkpoint.monitor=val/blue is not a figure a run logs"),
        (["callbacks.early_stopping.patience=0"], "patience=0 is out of range"),
        (["init_from=/nonexistent.ckpt"], "init_from=/nonexistent.ckpt: no such file"),
    ],
)  # fmt: skip
def test_bad_controls_are_one_line_naming_the_option(toy_corpus, tmp_path, args, says):
    res = run_here(["train", *tiny_overrides(toy_corpus), f"hydra.run.dir={tmp_path}/r", *args])
    err = res.stderr.decode()
    assert res.returncode == 2 and says in err and "Traceback" not in err, err[-2000:]


# ------------------------------------------------------------------ fine-tuning
@pytest.fixture(scope="module")
def source(toy_corpus, tmp_path_factory):
    """A toy model trained two epochs: what the fine-tuned runs start from."""
    run = tmp_path_factory.mktemp("source")
    fit(toy_corpus, run, "trainer.max_epochs=2")
    return run / "checkpoints" / "best.ckpt"


def test_fine_tuning_starts_at_the_checkpoints_dev_perplexity(toy_corpus, source, tmp_path):
    fit(toy_corpus, tmp_path, f"init_from={source}", "model.optimizer.lr=0", "trainer.max_epochs=1")
    was = best_score(ckpt(source))
    assert best_score(ckpt(tmp_path / "checkpoints" / "last.ckpt")) == pytest.approx(was, rel=1e-6)


def test_fine_tuning_has_a_fresh_optimizer_and_step_counter(toy_corpus, source, tmp_path):
    fit(toy_corpus, tmp_path, f"init_from={source}", "trainer.max_steps=3")
    now, was = ckpt(tmp_path / "checkpoints" / "last.ckpt"), ckpt(source)
    assert now["global_step"] == 3 < was["global_step"]
    steps = {float(s["step"]) for s in now["optimizer_states"][0]["state"].values()}
    assert steps == {3.0}  # Adam's own count: this run's steps, not the checkpoint's too


def test_fine_tuning_on_another_corpus_keeps_the_vocabularies(toy_corpus, source, tmp_path):
    other = {"train": write_corpus(tmp_path, "other", 40, 9), "dev": toy_corpus["dev"]}
    lines = other["train"]["src"]
    with open(lines, "a", encoding="utf-8") as fh:
        fh.write("zebra quokka\n")  # words the checkpoint never saw
    with open(other["train"]["tgt"], "a", encoding="utf-8") as fh:
        fh.write("zebra quokka\n")
    fit(other, tmp_path, f"init_from={source}", "trainer.max_steps=2", "freeze=[encoder]")
    now, was = ckpt(tmp_path / "checkpoints" / "last.ckpt"), ckpt(source)
    assert now["luong_lit"]["src_vocab"] == was["luong_lit"]["src_vocab"]
    for key, value in was["state_dict"].items():  # the encoder kept, the decoder trained
        same = torch.equal(now["state_dict"][key], value)
        assert same == key.startswith("net.encoder."), key


def test_a_fine_tuned_model_of_another_shape_is_one_line(toy_corpus, source, tmp_path):
    res = run_here(["train", *tiny_overrides(toy_corpus), f"init_from={source}",
                    "attention=local_p", f"hydra.run.dir={tmp_path}/r"])  # fmt: skip
    err = res.stderr.decode()
    assert res.returncode == 2 and "model.net.attention=global" in err and "asks for local_p" in err
    folder = run_here(["train", *tiny_overrides(toy_corpus), f"init_from={source.parent}",
                       f"hydra.run.dir={tmp_path}/r2"])  # fmt: skip
    assert folder.returncode == 2 and "is a folder" in folder.stderr.decode()


def test_freeze_names_parts_of_the_model(toy_corpus, source):
    from luong_lit.training.finetune import source_of

    cfg = compose_cfg([*tiny_overrides(toy_corpus), f"init_from={source}", "freeze=[encodr]"], ".")
    with pytest.raises(UserError, match="encodr is not a part of the model"):
        source_of(cfg)


# ------------------------------------------------------------------ weight averaging
def test_the_ema_weights_are_the_moving_average_of_the_raw_weights(toy_corpus, tmp_path):
    """Runs of 1, 2 and 3 steps from one seed: their raw weights are the steps' weights, and
    the third run's averaged weights equal the average computed here from them."""
    decay, raw, last = 0.6, [], None
    for steps in (1, 2, 3):
        run = tmp_path / f"s{steps}"
        fit(
            toy_corpus,
            run,
            f"trainer.max_steps={steps}",
            f"callbacks.ema.decay={decay}",
            "schedule=constant",
        )  # the same rate at each step, however long the run
        last = ckpt(run / "checkpoints" / "last.ckpt")
        raw.append(last["current_model_state"])
    for key, value in last["state_dict"].items():
        expected = raw[0][key]  # the first update copies the weights
        for weights in raw[1:]:
            expected = decay * expected + (1 - decay) * weights[key]
        torch.testing.assert_close(value, expected, rtol=1e-5, atol=1e-7, msg=key)
    assert not torch.equal(last["state_dict"]["net.decoder.W_c.weight"],
                           raw[-1]["net.decoder.W_c.weight"])  # fmt: skip
