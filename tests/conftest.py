"""Shared fixtures: a tiny parallel corpus written by the tests, and config composition."""

from __future__ import annotations

import contextlib
import io
import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import torch

os.environ.setdefault("WANDB_MODE", "disabled")
# prepared stores, checksums and sentencepiece models of this test session only
os.environ.setdefault("LUONG_LIT_CACHE", tempfile.mkdtemp(prefix="luong_lit_test_cache_"))
os.environ.setdefault("OMP_NUM_THREADS", "1")
torch.set_num_threads(1)

from luong_lit.config import CONF_DIR  # noqa: E402 - the kit's own configs

SHARED_DATA = Path(
    os.environ.get("LUONG_LIT_DATA") or Path(__file__).resolve().parents[2] / "shared" / "data"
)
WORDS = "a b c d e f g h i j".split()


def small_model(**options):
    """A small :class:`~luong_lit.nn.Seq2Seq` for tests: 20-word vocabularies and two layers of
    8 units unless ``options`` (its keyword arguments) say otherwise."""
    from luong_lit.nn import Seq2Seq

    sizes = {"src_vocab_size": 20, "tgt_vocab_size": 20, "embed_size": 8, "hidden_size": 8}
    return Seq2Seq(**{**sizes, "num_layers": 2, **options})


def write_corpus(root: Path, name: str, n: int, seed: int, reverse: bool = False) -> dict[str, str]:
    """A toy copy (or reverse) task: target = source (reversed), 3–7 words from 10."""
    rng = random.Random(seed)
    src, tgt = [], []
    for _ in range(n):
        words = [rng.choice(WORDS) for _ in range(rng.randint(3, 7))]
        src.append(" ".join(words))
        tgt.append(" ".join(reversed(words) if reverse else words).upper())
    root.mkdir(parents=True, exist_ok=True)
    (root / f"{name}.src").write_text("\n".join(src) + "\n", encoding="utf-8")
    (root / f"{name}.tgt").write_text("\n".join(tgt) + "\n", encoding="utf-8")
    return {"src": str(root / f"{name}.src"), "tgt": str(root / f"{name}.tgt")}


@pytest.fixture(scope="session")
def toy_corpus(tmp_path_factory) -> dict[str, dict[str, str]]:
    root = tmp_path_factory.mktemp("toy")
    return {"train": write_corpus(root, "train", 64, 1), "dev": write_corpus(root, "dev", 8, 2)}


def compose_cfg(overrides: list[str], out_dir: Path):
    """The real ``conf/train.yaml``, composed as ``python -m luong_lit.train`` would."""
    from hydra import compose, initialize_config_dir

    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        return compose("train", overrides=[f"paths.output_dir={out_dir}", *overrides])


def tiny_overrides(corpus: dict[str, dict[str, str]]) -> list[str]:
    """Shrink the main job to a few-second run on the toy corpus."""
    return [
        "data=files",
        f"data.train.src={corpus['train']['src']}",
        f"data.train.tgt={corpus['train']['tgt']}",
        f"data.dev.src={corpus['dev']['src']}",
        f"data.dev.tgt={corpus['dev']['tgt']}",
        "data.batch_size=8",
        "data.eval_batch_size=8",
        "model.net.embed_size=8",
        "model.net.hidden_size=8",
        "model.net.num_layers=2",
        "logger=none",
        "trainer.enable_progress_bar=false",
        "callbacks.attention_heatmaps.every_n_epochs=0",  # pictures are tested on their own
    ]


@pytest.fixture(scope="session")
def lowercase_model(toy_corpus, tmp_path_factory) -> Path:
    """A toy model whose corpus is lowercased and Moses-tokenised, with a cased target text
    (its best checkpoint)."""
    from luong_lit.training.run import train

    out = tmp_path_factory.mktemp("lc")
    cased = out / "cased.tgt"
    cased.write_text("x B c\ny B d\nz b\n", encoding="utf-8")  # "b" is usually "B"
    cfg = compose_cfg(
        tiny_overrides(toy_corpus)
        + [
            "trainer.max_epochs=3",
            "data.preprocess={lowercase:true,moses:true}",
            f"data.recase_from={cased}",
            "data.src_lang=en",
            "data.tgt_lang=de",
        ],
        out,
    )
    train(cfg)
    return out / "checkpoints" / "best.ckpt"


@pytest.fixture(scope="session")
def local_p_model(toy_corpus, tmp_path_factory) -> Path:
    """A toy local-p model with the lowercase recipe: its attention has a p_t per step."""
    from luong_lit.training.run import train

    out = tmp_path_factory.mktemp("local_p")
    recipe = ["data.preprocess={lowercase:true,moses:true}", "data.src_lang=en", "data.tgt_lang=de"]
    local = ["attention=local_p", "model.net.attention.D=2", "trainer.max_epochs=2"]
    cfg = compose_cfg(tiny_overrides(toy_corpus) + recipe + local, out)
    train(cfg)
    return out / "checkpoints" / "best.ckpt"


@pytest.fixture(scope="session")
def server(lowercase_model, local_p_model):
    """``serve global=... local_p=...`` (``serve_helpers.two_model_args``), started once for the
    server's tests and the page's: ``(process, port, what it printed on starting)``."""
    from serve_helpers import start_server, two_model_args

    proc, port, banner = start_server(*two_model_args(lowercase_model, local_p_model))
    yield proc, port, banner
    proc.kill()


def run_here(args: list[str], stdin: bytes | None = None) -> subprocess.CompletedProcess:
    """``python -m luong_lit ARGS`` in this process: its exit status and standard streams."""
    from hydra.core.global_hydra import GlobalHydra

    from luong_lit.__main__ import main

    GlobalHydra.instance().clear()
    out, err = io.StringIO(), io.StringIO()
    given = io.TextIOWrapper(io.BytesIO(stdin or b""), encoding="utf-8")
    saved = sys.stdin, sys.argv
    sys.stdin = given
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                status = main(list(args))
            except SystemExit as stop:
                status = stop.code if isinstance(stop.code, int) else 1
    finally:
        sys.stdin, sys.argv = saved
        GlobalHydra.instance().clear()
    return subprocess.CompletedProcess(
        args, status, out.getvalue().encode(), err.getvalue().encode()
    )
