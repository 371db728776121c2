"""The guide's "Extending the kit" (``docs/guide/extending.md``), followed literally: its
attention (local-p with a learned σ), its score and its named corpus are registered by running
the page's own code, then each trains a few steps through ``train(compose(...))`` with
``attention=NAME``, ``score=NAME`` and ``data.dataset=NAME``; the registries refuse what they
must, and the fast engine computes a registered attention as the reference does."""

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
    """The page's Python, as written."""
    text = (REPO / "docs" / "guide" / "extending.md").read_text(encoding="utf-8")
    return re.search(r"```python\n(.*?)```", text, re.S).group(1)


def readme_parts() -> str:
    """The README code that registers the parts (all of it up to the corpus): a module's."""
    code = readme_code()
    return code[: code.index("corpus = ")]


@pytest.fixture(scope="module")
def readme(toy_corpus, tmp_path_factory):
    """The README's code run as written, in a folder of its own, ``MY_CORPUS`` the toy corpus
    as en/de files: its parts registered, its run trained; taken out of the registries again
    afterwards. ``(its namespace, its run folder)``."""
    import os

    mine, here = tmp_path_factory.mktemp("mine"), tmp_path_factory.mktemp("readme")
    for split in ("train", "dev"):
        shutil.copy(toy_corpus[split]["src"], mine / f"{split}.en")
        shutil.copy(toy_corpus[split]["tgt"], mine / f"{split}.de")
    namespace = {"__name__": "readme_extending"}
    before, cwd = os.environ.get("MY_CORPUS"), os.getcwd()
    os.environ["MY_CORPUS"] = str(mine)
    os.chdir(here)
    try:
        exec(compile(readme_code(), "docs/guide/extending.md", "exec"), namespace)
    finally:
        os.chdir(cwd)
        os.environ.pop("MY_CORPUS") if before is None else os.environ.update(MY_CORPUS=before)
    (run,) = (here / "logs" / "train" / "runs").iterdir()
    yield namespace, run
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
        with pytest.raises(CheckpointError, match="attention 'local_p_sigma' is not registered"):
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


def test_the_readme_run_trains_on_a_named_corpus_from_local_files(readme):
    from luong_lit.analysis.runs import corpus_label, describe

    namespace, run = readme
    assert math.isfinite(namespace["run"]["val/ppl"])
    net, *_, meta = load_model(run / "checkpoints" / "best.ckpt")
    assert type(net.decoder.attention) is namespace["LearnedSigma"]
    assert meta.data.config["dataset"] == "mine" and "attention local_p_sigma" in meta.parts
    assert describe(run).attention == "local_p_sigma"  # its folder reads as a run
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


# ------------------------------------------------------------------ parts every command loads
@pytest.fixture(scope="session")  # once a worker, however xdist deals the tests
def user_dir_run(toy_corpus, tmp_path_factory):
    """``my_parts.py`` (the README's registering code) and a run trained from the command line
    with ``--user-dir my_parts.py``: ``(the module's folder, the run, what train printed)``."""
    from conftest import run_cli

    folder = tmp_path_factory.mktemp("parts")
    (folder / "my_parts.py").write_text(readme_parts(), encoding="utf-8")
    run = folder / "run"
    res = run_cli(["--user-dir", str(folder / "my_parts.py"), "train", *tiny_overrides(toy_corpus),
                   "attention=local_p_sigma", "score=scaled_dot", *QUICK,
                   f"hydra.run.dir={run}"])  # fmt: skip
    assert res.returncode == 0, res.stderr.decode()[-2000:]
    return folder, run, res.stdout.decode() + res.stderr.decode()


def test_a_run_with_a_user_dir_says_how_to_translate_with_it(user_dir_run):
    from conftest import run_cli

    folder, run, said = user_dir_run
    line = next(x for x in said.splitlines() if x.startswith("translate with:"))
    assert f"--user-dir {folder / 'my_parts.py'}" in line  # the printed command runs as printed
    argv = line.split("python -m luong_lit ", 1)[1].split()
    res = run_cli([*argv, "--quiet"], stdin=b"a b c\n")
    assert res.returncode == 0 and res.stdout.decode().strip(), res.stderr.decode()[-2000:]


def test_a_checkpoint_whose_part_is_not_loaded_says_which_module_registered_it(user_dir_run):
    from conftest import run_cli

    folder, run, _ = user_dir_run
    res = run_cli(["translate", str(run / "checkpoints" / "best.ckpt"), "--quiet"], stdin=b"a b\n")
    err = res.stderr.decode()
    assert res.returncode == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert "'local_p_sigma' is not registered here" in err and "module my_parts" in err
    assert f"give --user-dir {folder / 'my_parts.py'}" in err


def test_an_installed_package_with_an_entry_point_is_loaded_by_every_command(user_dir_run):
    """A distribution on the path (its ``.dist-info`` with an ``entry_points.txt``, as ``pip
    install`` writes it) that declares ``luong_lit.plugins``: translate and the API need no
    ``--user-dir``."""
    import os
    import subprocess
    import sys

    folder, run, _ = user_dir_run
    site = folder / "site"
    (site / "my_parts-0.1.dist-info").mkdir(parents=True)
    shutil.copy(folder / "my_parts.py", site / "my_parts.py")
    (site / "my_parts-0.1.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: my-parts\nVersion: 0.1\n", encoding="utf-8"
    )
    (site / "my_parts-0.1.dist-info" / "entry_points.txt").write_text(
        "[luong_lit.plugins]\nmy_parts = my_parts\n", encoding="utf-8"
    )
    env = {**os.environ, "PYTHONPATH": str(site), "PYTHONWARNINGS": "ignore"}
    ckpt = run / "checkpoints" / "best.ckpt"
    res = subprocess.run([sys.executable, "-m", "luong_lit", "translate", str(ckpt), "--quiet"],
                         input=b"a b c\n", env=env, capture_output=True, cwd=REPO)  # fmt: skip
    assert res.returncode == 0 and res.stdout.strip(), res.stderr.decode()[-2000:]
    api = f"import luong_lit; print(luong_lit.load({str(ckpt)!r}).translate(['a b c']))"
    res = subprocess.run([sys.executable, "-c", api], env=env, capture_output=True, cwd=REPO)
    assert res.returncode == 0 and b"[" in res.stdout, res.stderr.decode()[-2000:]
