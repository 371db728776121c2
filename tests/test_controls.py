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
@pytest.fixture(scope="session")  # once a worker, however xdist deals the tests
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


def test_a_fine_tuned_run_stopped_and_resumed_equals_the_unbroken_one(toy_corpus, source, tmp_path):
    """A fine-tuned run resumed from its own last checkpoint (``ckpt_path=last``) takes its
    weights and vocabularies from there, not from ``init_from`` again: it ends where the
    unbroken fine-tuned run ends, weight for weight."""
    tuned = (f"init_from={source}", "freeze=[encoder]", "schedule=constant")
    fit(toy_corpus, tmp_path / "whole", *tuned, "trainer.max_epochs=2")
    fit(toy_corpus, tmp_path / "part", *tuned, "trainer.max_epochs=1")
    fit(toy_corpus, tmp_path / "part", *tuned, "trainer.max_epochs=2", "ckpt_path=last")
    whole, part = (ckpt(tmp_path / r / "checkpoints" / "last.ckpt") for r in ("whole", "part"))
    assert whole["global_step"] == part["global_step"] == 16
    assert part["luong_lit"]["tgt_vocab"] == ckpt(source)["luong_lit"]["tgt_vocab"]
    for key, value in whole["state_dict"].items():
        assert torch.equal(part["state_dict"][key], value), key


def test_a_fine_tuned_model_of_another_shape_is_one_line(toy_corpus, source, tmp_path):
    res = run_here(["train", *tiny_overrides(toy_corpus), f"init_from={source}",
                    "attention=local_p", f"hydra.run.dir={tmp_path}/r"])  # fmt: skip
    err = res.stderr.decode()
    assert res.returncode == 2 and "model.net.attention=global" in err and "asks for local_p" in err
    folder = run_here(["train", *tiny_overrides(toy_corpus), f"init_from={source.parent}",
                       f"hydra.run.dir={tmp_path}/r2"])  # fmt: skip
    assert folder.returncode == 2 and "is a folder" in folder.stderr.decode()


def test_freeze_names_parts_of_the_model(toy_corpus, source):
    from luong_lit.training.finetune import start_of

    cfg = compose_cfg([*tiny_overrides(toy_corpus), f"init_from={source}", "freeze=[encodr]"], ".")
    with pytest.raises(UserError, match="encodr is not a part of the model"):
        start_of(cfg)


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


# ------------------------------------------------------------------ words a user can act on
def run_lines(res) -> str:
    return res.stdout.decode() + res.stderr.decode()


def test_early_stopping_and_a_lowered_rate_each_say_so_in_a_line(toy_corpus, tmp_path):
    stop = ["callbacks.early_stopping.patience=2", "callbacks.early_stopping.min_delta=100",
            "schedule=plateau", "optim=sgd_paper", "model.scheduler.threshold=0.9"]  # fmt: skip
    res = run_here(["train", *tiny_overrides(toy_corpus), "trainer.max_epochs=8", *stop,
                    "test_after_training=false", f"hydra.run.dir={tmp_path}"])  # fmt: skip
    said = run_lines(res)
    assert res.returncode == 0, said[-2000:]
    assert "learning rate 1 -> 0.5 at step 16: val/ppl" in said  # the second validation stalls
    line = next(x for x in said.splitlines() if "early stopping at step 24" in x)
    assert "val/ppl has not improved on its best" in line and "(step 8)" in line
    assert "for 2 validations (patience 2)" in line
    log = (tmp_path / "train.log").read_text()
    assert "early stopping at step 24" in log and "learning rate 1 -> 0.5" in log


def test_the_closing_lines_name_the_metric_best_ckpt_was_chosen_by(toy_corpus, tmp_path):
    res = run_here(["train", *tiny_overrides(toy_corpus), "trainer.max_epochs=1", "select_by=bleu",
                    "test_after_training=false", f"hydra.run.dir={tmp_path}"])  # fmt: skip
    assert res.returncode == 0 and "(best by validation BLEU (greedy))" in run_lines(res)


def test_freeze_without_init_from_is_refused_in_one_line(toy_corpus, tmp_path):
    res = run_here(["train", *tiny_overrides(toy_corpus), "freeze=[encoder]",
                    f"hydra.run.dir={tmp_path}/r"])  # fmt: skip
    err = res.stderr.decode()
    assert res.returncode == 2 and "give init_from=CKPT too" in err and "Traceback" not in err


def test_resuming_when_every_run_has_finished_says_no_unfinished_run(toy_corpus, tmp_path):
    logs = tmp_path / "logs"
    done = ["train", *tiny_overrides(toy_corpus), "trainer.max_epochs=1", f"paths.log_dir={logs}"]
    assert run_here([*done, f"hydra.run.dir={logs}/train/runs/a"]).returncode == 0
    res = run_here(["train", "ckpt_path=last", f"paths.log_dir={logs}",
                    f"hydra.run.dir={logs}/train/runs/b"])  # fmt: skip
    err = res.stderr.decode()
    assert res.returncode == 2 and "no unfinished run under" in err and "1 runs" in err, err


def test_results_json_says_how_many_sentences_each_figure_covers(toy_corpus, tmp_path):
    test = write_corpus(tmp_path / "t", "test", 24, 5)
    res = run_here(["train", *tiny_overrides(toy_corpus), "trainer.max_epochs=1",
                    f"+data.test.toy.src={test['src']}", f"+data.test.toy.tgt={test['tgt']}",
                    "trainer.limit_test_batches=1", f"hydra.run.dir={tmp_path}/r"])  # fmt: skip
    assert res.returncode == 0, run_lines(res)[-2000:]
    import json

    toy = json.loads((tmp_path / "r" / "results.json").read_text())["toy"]
    assert toy["sentences_ppl"] == 8 and toy["sentences_bleu"] == 24  # one batch of 8; all
    assert "trainer.limit_test_batches=1 shortens the perplexity pass" in run_lines(res)


# ------------------------------------------------------------- fine-tuning, naming what changes
def test_fine_tuning_reads_the_model_from_the_checkpoint(toy_corpus, tmp_path_factory):
    """The source has 16 units and no input feeding; the fine-tuning command names neither
    (this config's: 8 units, feeding) and trains the checkpoint's model; naming a
    size that differs is refused in one line with both values; dropout may change."""
    src = tmp_path_factory.mktemp("wide")
    wide = ["model.net.hidden_size=16", "model.net.embed_size=16", "feed_input=false"]
    fit(toy_corpus, src, "trainer.max_epochs=1", *wide)
    source = src / "checkpoints" / "best.ckpt"
    run = tmp_path_factory.mktemp("tuned")
    unnamed = [o for o in tiny_overrides(toy_corpus) if not o.startswith("model.net.")]
    res = run_here(["train", *unnamed, f"init_from={source}", "dropout=0.3",
                    "trainer.max_steps=2", f"hydra.run.dir={run}"])  # fmt: skip
    assert res.returncode == 0, run_lines(res)[-2000:]
    net = ckpt(run / "checkpoints" / "last.ckpt")["luong_lit"]["net"]
    assert net["hidden_size"] == 16 and net["feed_input"] is False and net["dropout"] == 0.3
    line = next(x for x in run_lines(res).splitlines() if "its model, read from it" in x)
    assert "feed_input false" in line and "hidden_size 16" in line
    assert ", dropout " not in line and "(dropout " not in line  # named here: this run's
    from luong_lit.analysis.runs import describe

    assert describe(run).feed_input is False  # its folder says what it trained
    res = run_here(["train", *unnamed, f"init_from={source}", "model.net.hidden_size=8",
                    f"hydra.run.dir={run}_bad"])  # fmt: skip
    err = res.stderr.decode()
    assert res.returncode == 2 and "model.net.hidden_size=16" in err and "asks for 8" in err


# ------------------------------------------------------------------ the newest epochs, averaged
def test_keep_last_keeps_the_newest_epochs_and_average_last_means_them(toy_corpus, tmp_path):
    fit(toy_corpus, tmp_path, "trainer.max_epochs=4", "callbacks.epoch_checkpoints.keep_last=2")
    epochs = tmp_path / "checkpoints" / "epochs"
    assert sorted(p.name for p in epochs.iterdir()) == ["e02.ckpt", "e03.ckpt"]
    res = run_here(["average", str(tmp_path), "--last", "2"])
    assert res.returncode == 0 and "e02.ckpt, e03.ckpt" in res.stdout.decode(), res.stderr
    mean = ckpt(tmp_path / "avg.ckpt")["state_dict"]
    a, b = (ckpt(epochs / n)["state_dict"] for n in ("e02.ckpt", "e03.ckpt"))
    for key, value in mean.items():
        torch.testing.assert_close(value, (a[key] + b[key]) / 2, msg=key)
    res = run_here(["average", str(tmp_path), "--last", "3"])
    assert res.returncode == 2 and "keeps 2 epoch checkpoints" in res.stderr.decode()
