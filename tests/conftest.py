"""What the tests share: tiny corpora and models, composed configs, trained toy runs (each made once
per session), the commands run in this process or as a user runs them, and the toolkit of the
resume tests (a run started, stopped and resumed in a subprocess)."""

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

#: the local mirror of the corpora (``LUONG_LIT_DATA``, laid out as the README says): the tests
#: that read a corpus are skipped without one (nothing is downloaded while testing)
DATA_MIRROR = Path(os.environ.get("LUONG_LIT_DATA") or "LUONG_LIT_DATA-is-not-set")
needs_mirror = pytest.mark.skipif(
    not DATA_MIRROR.is_dir(), reason="needs LUONG_LIT_DATA: a local mirror of the corpora"
)
WORDS = "a b c d e f g h i j".split()
REPO = Path(__file__).resolve().parents[1]


def pytest_addoption(parser):
    parser.addoption(
        "--long",
        action="store_true",
        help="also run the tests marked long (the stop matrix on ddp_sim, ...)",
    )


def pytest_collection_modifyitems(config, items):
    """The tests marked ``long`` run with ``--long`` only (CI's run leaves them out)."""
    why = "long (minutes on 2 cores), out of CI's run: pytest --long runs it"
    skip = pytest.mark.skipif(not config.getoption("--long"), reason=why)
    for item in items:
        if "long" in item.keywords:
            item.add_marker(skip)


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
    """The real ``conf/train.yaml``, composed as ``python -m luong_lit.train`` would (its
    resolvers known, whichever test ran before in this process)."""
    from hydra import compose, initialize_config_dir

    from luong_lit.config_parts import offer_parts
    from luong_lit.sweeps.resolvers import register_resolvers

    register_resolvers()
    offer_parts()  # attention=NAME and score=NAME: the registered parts, as the command offers

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


def run_cli(
    args: list[str], *, stdin: bytes | str | None = None, cwd: Path = REPO, timeout: int = 300
) -> subprocess.CompletedProcess:
    """``python -m luong_lit ARGS`` in a subprocess, as a user runs it (text in and out when
    ``stdin`` is text, else bytes)."""
    env = {**os.environ, "PYTHONWARNINGS": "ignore", "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "luong_lit", *args]
    return subprocess.run(cmd, cwd=cwd, env=env, input=stdin, capture_output=True,
                          timeout=timeout, text=isinstance(stdin, str))  # fmt: skip


def translate_lines(ckpt: Path, text: str, *args: str) -> list[str]:
    """``translate CKPT --quiet ARGS`` of ``text``: its output lines (the command must succeed)."""
    res = run_cli(["translate", str(ckpt), "--quiet", *args], stdin=text, timeout=120)
    assert res.returncode == 0, res.stderr
    return res.stdout.splitlines()


def gz_lines(path: Path) -> list[str]:
    import gzip

    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return fh.read().splitlines()


def pair_batch(B=3, S=7, T=6, V=20, seed=0):
    """Sources of lengths ``S``, 4 and 1 (padded) and targets of ``T`` words: ``(src, src_len,
    tgt)`` drawn from a ``V``-word vocabulary."""
    g = torch.Generator().manual_seed(seed)
    src_len = torch.tensor([S, 4, 1][:B])
    src = torch.randint(4, V, (B, S), generator=g)
    src[torch.arange(S) >= src_len.unsqueeze(1)] = 0
    return src, src_len, torch.randint(4, V, (B, T), generator=g)


def source_batch(n=5, S=7, seed=0):
    """``n`` padded sources of random lengths 2 to ``S``: ``(src, src_len)``."""
    g = torch.Generator().manual_seed(seed)
    src_len = torch.randint(2, S + 1, (n,), generator=g)
    src = torch.randint(4, 20, (n, S), generator=g)
    src[torch.arange(S) >= src_len.unsqueeze(1)] = 0
    return src, src_len


def toy_batch(seed: int = 0, V: int = 40):
    """A :class:`~luong_lit.data.loading.batching.Batch` of three ragged sentences: source
    lengths 9, 5 and 1, target lengths 7, 3 and 5, words from a ``V``-word vocabulary."""
    from luong_lit.data.loading.batching import Batch

    g = torch.Generator().manual_seed(seed)
    src_len, tgt_len = torch.tensor([9, 5, 1]), torch.tensor([7, 3, 5])
    src = torch.randint(4, V, (3, 9), generator=g)
    src[torch.arange(9) >= src_len.unsqueeze(1)] = 0
    tgt_out = torch.randint(4, V, (3, 7), generator=g)
    tgt_out[torch.arange(7) >= tgt_len.unsqueeze(1)] = 0
    tgt_in = torch.cat([torch.full((3, 1), 2), tgt_out[:, :-1]], 1)
    return Batch(src, src_len, tgt_in, tgt_out, torch.arange(3))


@pytest.fixture()
def cache(tmp_path, monkeypatch):
    """An empty cache of the test's own (stores, downloads, checksums)."""
    monkeypatch.setenv("LUONG_LIT_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.fixture(scope="session")
def trained(toy_corpus, tmp_path_factory):
    """A copy-task model trained for a few epochs, with a test set and the beam callback on:
    ``(run directory, test set files, the run's metrics)``."""
    from luong_lit.training.run import train

    out = tmp_path_factory.mktemp("run")
    test = write_corpus(out / "data", "test", 10, 3)
    cfg = compose_cfg(
        tiny_overrides(toy_corpus)
        + [
            "trainer.max_epochs=3",
            "model.net.hidden_size=16",
            "model.net.embed_size=16",
            f"+data.test.toy.src={test['src']}",
            f"+data.test.toy.tgt={test['tgt']}",
            "callbacks.beam_bleu.every_n_epochs=1",
            "callbacks.beam_bleu.beam=3",
            "logger=csv",
        ],
        out,
    )
    metrics = train(cfg)
    return out, test, metrics


@pytest.fixture(scope="session")
def runs(toy_corpus, tmp_path_factory):
    """Three toy runs, global, local-m and local-p (general), with their heatmaps and saved
    configs, as run directories: ``{attention: run directory}``."""
    extra = ["trainer.max_epochs=2", "logger=csv", "callbacks.attention_heatmaps.sentences=[0,1]",
             "callbacks.attention_heatmaps.every_n_epochs=1"]  # fmt: skip
    return {
        att: saved_run(
            tmp_path_factory.mktemp(att), toy_corpus, [f"attention={att}", "score=general"], extra
        )
        for att in ("global", "local_m", "local_p")
    }


def saved_run(run: Path, corpus, overrides: list[str], extra: list[str]) -> Path:
    """A toy run trained in this process into ``run``, with its config and ``overrides`` saved
    under ``.hydra/`` as Hydra saves them (``extra``: overrides it does not record)."""
    from omegaconf import OmegaConf

    from luong_lit.training.run import train

    cfg = compose_cfg(tiny_overrides(corpus) + overrides + extra, run)
    train(cfg)
    (run / ".hydra").mkdir()
    OmegaConf.save(cfg, run / ".hydra" / "config.yaml")
    OmegaConf.save(OmegaConf.create(overrides), run / ".hydra" / "overrides.yaml")
    return run


HALVING = ("schedule=halving", "model.scheduler.after=1")


def fit_toy(tmp_path, corpus, epochs, extra=(), schedule=HALVING) -> Path:
    """Train a toy run on ``corpus`` for ``epochs`` with dropout and the paper's SGD (and
    ``extra`` overrides) in this process; its checkpoints folder."""
    from luong_lit.training.run import train

    overrides = [f"trainer.max_epochs={epochs}", "dropout=0.3", "optim=sgd_paper", *schedule,
                 "test_after_training=false", *extra]  # fmt: skip
    train(compose_cfg(tiny_overrides(corpus) + overrides, tmp_path))
    return tmp_path / "checkpoints"


# ------------------------------------------------------------ runs stopped and resumed
PAPER_SCHEDULE = ("optim=sgd_paper", "schedule=halving", "model.scheduler.after=1")
MAIN_JOB_SCHEDULE = ("optim=adam", "schedule=linear_decay")  # m30k_small's


@pytest.fixture(scope="session")
def resume_corpus(tmp_path_factory):
    """480 toy pairs to train on, 40 to validate (5 batches: a validation can be cut short)."""
    root = tmp_path_factory.mktemp("resume")
    return {
        "train": write_corpus(root, "train", 480, 11),
        "dev": write_corpus(root, "dev", 40, 12),
    }


def train_command(corpus, run_dir: Path, *extra: str, schedule=PAPER_SCHEDULE) -> list[str]:
    """``python -m luong_lit train`` of a 3-epoch run with dropout and a checkpoint every step."""
    overrides = tiny_overrides(corpus) + [
        "trainer.max_epochs=3",
        "dropout=0.3",
        *schedule,
        "test_after_training=false",
        "logger=csv",
        "threads=1",
        "model.net.hidden_size=32",
        "model.net.embed_size=32",
        "callbacks.checkpoint.every_n_train_steps=1",
        "callbacks.throughput.every_n_steps=2",  # a resumed epoch's callbacks run as well
        f"hydra.run.dir={run_dir}",
    ]
    return [sys.executable, "-m", "luong_lit", "train", *overrides, *extra]


def run_env() -> dict[str, str]:
    """A subprocess's environment, with ``tests/`` on its path (``signal_helpers``)."""
    tests = str(Path(__file__).resolve().parent)
    path = os.pathsep.join(p for p in (tests, os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "PYTHONWARNINGS": "ignore", "OMP_NUM_THREADS": "1", "PYTHONPATH": path}


def step_of(ckpt: Path) -> int:
    """The global step a checkpoint holds (-1 while it is not written yet, or being replaced)."""
    try:
        return int(torch.load(ckpt, map_location="cpu", weights_only=True)["global_step"])
    except Exception:  # noqa: BLE001 - not written yet, or being replaced
        return -1


@pytest.fixture(scope="session")
def unbroken(resume_corpus, tmp_path_factory):
    """The run of :func:`train_command`, trained without a stop: what every resume must equal."""
    run_dir = tmp_path_factory.mktemp("unbroken")
    res = subprocess.run(train_command(resume_corpus, run_dir), cwd=REPO, env=run_env(),
                         capture_output=True, text=True)  # fmt: skip
    assert res.returncode == 0, res.stderr[-2000:]
    return run_dir
