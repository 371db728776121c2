"""The README's "Extending the kit", followed literally: its attention (local-p with a learned
σ), its score and its named corpus are registered by running the README's own code, then each
trains a few steps through ``train(compose(...))`` with ``attention=NAME``, ``score=NAME`` and
``data.dataset=NAME``; the registries refuse what they must, and the fast engine computes a
registered attention as the reference does."""

from __future__ import annotations

import math
import re
import shutil

import pytest
import torch
from conftest import REPO, compose_cfg, small_model, tiny_overrides, toy_batch

from luong_lit.checkpoint.models import load_model
from luong_lit.data.sources import CORPORA
from luong_lit.errors import CheckpointError
from luong_lit.nn import ATTENTIONS, SCORES, LocalPredictiveAttention, register_attention
from luong_lit.registry import Registry
from luong_lit.training.run import train

QUICK = ["trainer.max_epochs=1", "test_after_training=false"]


def readme_code() -> str:
    """The section's Python, its training call made to keep the overrides it trains with."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text.split("## Extending the kit", 1)[1].split("\n## ", 1)[0]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    assert code.count("train(compose(") == 1
    return code.replace("train(compose(", "overrides = ((")


@pytest.fixture(scope="module")
def readme(toy_corpus, tmp_path_factory):
    """The README's parts registered by its own code, ``/data/mine`` the toy corpus in en/de
    files; taken out of the registries again afterwards."""
    mine = tmp_path_factory.mktemp("mine")
    for split in ("train", "dev"):
        shutil.copy(toy_corpus[split]["src"], mine / f"{split}.en")
        shutil.copy(toy_corpus[split]["tgt"], mine / f"{split}.de")
    namespace = {"__name__": "readme_extending"}
    exec(compile(readme_code().replace("/data/mine", str(mine)), "README.md", "exec"), namespace)
    yield namespace, namespace["overrides"]
    ATTENTIONS.remove("local_p_sigma")
    SCORES.remove("scaled_dot")
    CORPORA.remove("mine")


def fit(overrides: list[str], out) -> dict:
    return train(compose_cfg(overrides + QUICK, out))


def test_a_new_attention_variant_trains_and_its_checkpoint_loads(readme, toy_corpus, tmp_path):
    namespace, _ = readme
    metrics = fit([*tiny_overrides(toy_corpus), "attention=local_p_sigma",
                   "model.net.attention.D=3"], tmp_path)  # fmt: skip
    assert math.isfinite(metrics["train/loss"]) and math.isfinite(metrics["val/ppl"])
    net, *_ = load_model(tmp_path / "checkpoints" / "best.ckpt")
    att = net.decoder.attention
    assert type(att) is namespace["LearnedSigma"] and net.window == 3  # an offered option
    assert att.W_p.bias is not None  # a subclass of local-p is given dim and bias as local-p is
    assert float(att.log_sigma.detach()) != pytest.approx(math.log(1.5), abs=1e-7)  # learned
    ATTENTIONS.remove("local_p_sigma")  # a checkpoint names only registered parts
    try:
        with pytest.raises(CheckpointError, match="attention='local_p_sigma' is unknown"):
            load_model(tmp_path / "checkpoints" / "best.ckpt")
    finally:
        ATTENTIONS.add("local_p_sigma", namespace["LearnedSigma"])


def test_a_new_score_trains(readme, toy_corpus, tmp_path):
    namespace, _ = readme
    cfg = compose_cfg([*tiny_overrides(toy_corpus), "score=scaled_dot", *QUICK], tmp_path)
    assert cfg.model.net.score == {"name": "scaled_dot"}
    assert math.isfinite(train(cfg)["val/ppl"])
    net, *_ = load_model(tmp_path / "checkpoints" / "best.ckpt")
    assert type(net.attention.score) is namespace["ScaledDot"]
    assert net.attention.score.scale == 8**-0.5


def test_the_readme_run_trains_on_a_named_corpus_from_local_files(readme, toy_corpus, tmp_path):
    from luong_lit.analysis.runs import corpus_label

    _, overrides = readme
    assert "data.dataset=mine" in overrides
    shrink = [o for o in tiny_overrides(toy_corpus) if not o.startswith(("data=", "data.train",
                                                                         "data.dev"))]  # fmt: skip
    cfg = compose_cfg([*overrides, *shrink, *QUICK], tmp_path)
    assert cfg.data.dataset == "mine" and cfg.model.net.attention.name == "local_p_sigma"
    assert math.isfinite(train(cfg)["val/ppl"])
    assert corpus_label("mine", "en", "de", None) == "mine En→De"  # reports: its label


def test_the_fast_engine_computes_a_registered_attention_as_the_reference_does(readme):
    from luong_lit.nn.fast.model import fast_nll
    from luong_lit.nn.loss import token_nll

    torch.manual_seed(0)
    net = small_model(attention={"name": "local_p_sigma", "D": 2}, score="scaled_dot").double()
    batch = toy_batch(V=20)
    losses, grads = [], []
    for nll in (token_nll, fast_nll):
        net.zero_grad()
        loss, _ = nll(net, batch)
        loss.backward()
        losses.append(loss.detach())
        grads.append(net.decoder.attention.log_sigma.grad.clone())
    torch.testing.assert_close(losses[0], losses[1])
    torch.testing.assert_close(grads[0], grads[1])
    assert grads[0].abs() > 0  # σ is learned through both


def test_the_registries_refuse_what_they_must(readme):
    namespace, _ = readme
    with pytest.raises(ValueError, match="'local_p' is taken already"):
        register_attention("local_p")(namespace["LearnedSigma"])
    with pytest.raises(ValueError, match="lower-case letters"):
        register_attention("Local-P")(namespace["LearnedSigma"])
    with pytest.raises(TypeError, match="not a subclass of Attention"):
        register_attention("plain")(torch.nn.Linear)
    register_attention("local_p")(LocalPredictiveAttention)  # the same class again: no change
    with pytest.raises(ValueError, match="'none'"):
        Registry("thing").add("none", object())
