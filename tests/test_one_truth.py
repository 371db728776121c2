"""One truth per run, from the user's side: what ``results.json`` reports is ``evaluate`` of the
checkpoint it names, under every control (EMA, ``select_by``, early stopping, a plateau
schedule, token batches): the same weights were validated, chosen, tested and saved."""

from __future__ import annotations

import json

import pytest
import torch
from conftest import compose_cfg, run_here, tiny_overrides, write_corpus

#: control -> its overrides (each trains a run that learns: Adam at 0.01)
CONTROLS = {
    "defaults": [],
    "EMA": ["callbacks.ema.decay=0.9"],
    "select_by=bleu, early stopping": ["select_by=bleu", "callbacks.early_stopping.patience=2"],
    "plateau, token batches, EMA": ["schedule=plateau", "data.max_tokens=60", "data.max_len=12",
                                    "callbacks.ema.decay=0.8"],
}  # fmt: skip


@pytest.fixture(scope="session")  # once a worker, however xdist deals the tests
def truth_corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("truth")
    return {"train": write_corpus(root, "train", 96, 31), "dev": write_corpus(root, "dev", 16, 32),
            "test": write_corpus(root, "test", 16, 33)}  # fmt: skip


def trained(corpus, run, extra) -> dict:
    from luong_lit.training.run import train

    test = corpus["test"]
    args = [*tiny_overrides(corpus), "model.net.hidden_size=24", "model.net.embed_size=24",
            "optim=adam", "model.optimizer.lr=0.02", "trainer.max_epochs=4",
            "callbacks.beam_bleu.beam=3", f"+data.test.toy.src={test['src']}",
            f"+data.test.toy.tgt={test['tgt']}", *extra]  # fmt: skip
    train(compose_cfg(args, run))
    return json.loads((run / "results.json").read_text())


def evaluated(ckpt, out, beam: int) -> dict:
    res = run_here(["evaluate", str(ckpt), "--test", "toy", "--beam", str(beam), "--out",
                    str(out), "--quiet"])  # fmt: skip
    assert res.returncode == 0, res.stderr.decode()[-2000:]
    return json.loads((out / "eval_toy.json").read_text())


@pytest.mark.parametrize("control", list(CONTROLS))
def test_results_json_is_evaluate_of_the_checkpoint_it_names(truth_corpus, tmp_path, control):
    results = trained(truth_corpus, tmp_path / "run", CONTROLS[control])
    ckpt = tmp_path / "run" / "checkpoints" / results["checkpoint"]
    toy = results["toy"]
    beam, greedy = evaluated(ckpt, tmp_path / "beam", 3), evaluated(ckpt, tmp_path / "greedy", 1)
    assert toy["ppl"] == pytest.approx(beam["ppl"][0], rel=1e-6)  # float32 sums, other batches
    for m in ("bleu", "chrf", "chrfpp", "ter"):  # each under one name in both files
        assert toy[f"{m}_beam"] == beam["beam"][f"{m}_tok"], m
        assert toy[f"{m}_beam_unk"] == beam["beam_unk"][f"{m}_tok"], m
    assert toy["bleu_greedy"] == greedy["beam"]["bleu_tok"] > 0  # a model that translates
    assert toy["sentences_ppl"] == toy["sentences_bleu"] == 16
    if "EMA" in control:  # what was tested and saved is the average, not the raw weights
        kept = torch.load(ckpt, weights_only=True)
        assert not torch.equal(
            kept["state_dict"]["net.decoder.W_c.weight"],
            kept["current_model_state"]["net.decoder.W_c.weight"],
        )
