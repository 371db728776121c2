"""Bad input, one table: every case runs the command as a user would and expects either a
clear error (exit status 2, the file, line or option named, no traceback) or a correct result,
and nothing already on disk is lost (the files made beforehand are unchanged afterwards).

The table's commands run in this process (``python -m luong_lit``'s own ``main``, with its
standard streams captured): what a user sees, without a new interpreter for each case. What
needs a terminal runs in a pseudo-terminal."""

from __future__ import annotations

import gzip
import hashlib
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import torch
from conftest import REPO, compose_cfg, run_cli, run_here, tiny_overrides, write_corpus


@dataclass
class Case:
    name: str
    args: Callable[[dict], list[str]]  # the command line after ``python -m luong_lit``
    status: int = 2
    says: list[str] = field(
        default_factory=list
    )  # substrings of stderr ({dir} is the case's files)
    prepare: Callable[[Path], None] | None = None  # writes the case's own files
    stdin: bytes | None = None
    needs_no_gpu: bool = False  # what a machine without a GPU says
    needs_no_slurm: bool = False  # what a machine without SLURM's srun says


def train(*extra: str) -> Callable[[dict], list[str]]:
    return lambda ctx: ["train", *ctx["overrides"], f"hydra.run.dir={ctx['dir']}/run", *extra]


def sweep(*extra: str, m_last: bool = False) -> Callable[[dict], list[str]]:
    """A ``-m`` sweep whose folder is the case's ``run`` (``m_last``: ``-m`` at the end)."""

    def args(ctx: dict) -> list[str]:
        overrides = [*ctx["overrides"], f"hydra.sweep.dir={ctx['dir']}/run", *extra]
        return ["train", *overrides, "-m"] if m_last else ["train", "-m", *overrides]

    return args


NO_PLUGIN = "hydra.launcher._target_=hydra_plugins.no.Launcher"  # a launcher that is not there


def corpus_file(name: str, data: bytes) -> Callable[[Path], None]:
    def write(d: Path) -> None:
        (d / name).write_bytes(data)

    return write


def with_file(option: str, name: str) -> Callable[[dict], list[str]]:
    """Training with the case's own file as ``option``."""
    return lambda ctx: train(f"{option}={ctx['dir']}/{name}")(ctx)


def translate(*extra: str) -> Callable[[dict], list[str]]:
    return lambda ctx: ["translate", ctx["ckpt"], "--quiet", *extra]


def on_checkpoint(name: str, command: str = "translate") -> Callable[[dict], list[str]]:
    tail = ["--test", "toy"] if command == "evaluate" else ["--quiet"]
    return lambda ctx: [command, f"{ctx['dir']}/{name}", *tail]


def damaged_checkpoint(name: str, edit: Callable[[dict], None]) -> Callable[[Path], None]:
    def write(d: Path) -> None:
        ckpt = torch.load(PRECIOUS / "run" / "checkpoints" / "last.ckpt", weights_only=True)
        edit(ckpt)
        torch.save(ckpt, d / name)

    return write


class _Code:  # pickled as a call to print: loading it unsafely would run code
    def __reduce__(self):
        return (print, ("loaded",))


PAIRS = b"a b c\nd e\n"


CASES = [
    # ------------------------------------------------------------------ data files
    Case(
        "missing train file",
        with_file("data.train.src", "nothing.src"),
        says=["{dir}/nothing.src: file does not exist"],
    ),
    Case(
        "empty train file",
        with_file("data.train.src", "empty.src"),
        says=["{dir}/empty.src: file is empty"],
        prepare=corpus_file("empty.src", b""),
    ),
    Case(
        "parallel files of different lengths",
        with_file("data.train.src", "short.src"),
        says=["parallel files differ in length", "{dir}/short.src ends after line 2"],
        prepare=corpus_file("short.src", PAIRS),
    ),
    Case(
        "bad UTF-8",
        with_file("data.train.src", "latin1.src"),
        says=["{dir}/latin1.src:2: not valid UTF-8 (byte 0xe9"],
        prepare=corpus_file("latin1.src", b"a b\nd\xe9j\xe0\n" + b"x\n" * 62),
    ),
    Case(
        "a NUL byte",
        with_file("data.train.src", "nul.src"),
        says=["{dir}/nul.src:3: control character U+0000 at column 2", "data.clean_control=true"],
        prepare=corpus_file("nul.src", b"a b\nc\nd\x00e\n" + b"x\n" * 61),
    ),
    Case(
        "a truncated gzip file",
        with_file("data.train.src", "cut.src.gz"),
        says=["{dir}/cut.src.gz", "cannot be read"],
        prepare=corpus_file("cut.src.gz", gzip.compress(b"a b c\n" * 64)[:30]),
    ),
    Case(
        "a test set given as a string",
        train("data.test=newstest"),
        says=["data.test must map test-set names to splits", "'newstest'"],
    ),
    Case(
        "every pair longer than max_len",
        train("data.max_len=1"),
        says=["no training pairs left after the length filter (max_len=1)"],
    ),
    Case(
        "min_freq above every count",
        train("data.min_freq=100000"),
        says=["source vocabulary (src) would hold no words", "data.min_freq=100000"],
    ),
    Case(
        "a missing dev file",
        with_file("data.dev.tgt", "no_dev.tgt"),
        says=["{dir}/no_dev.tgt: file does not exist"],
    ),
    Case(
        "control characters cleaned when asked",
        lambda ctx: [
            "prepare",
            *ctx["overrides"],
            f"data.train.src={ctx['dir']}/ctl.src",
            "data.clean_control=true",
        ],
        status=0,
        prepare=corpus_file("ctl.src", b"a\x07b c\n" * 64),
    ),
    # ------------------------------------------------------------------ configs
    Case(
        "batch size 0",
        train("data.batch_size=0"),
        says=["data.batch_size=0 is out of range: it must be an integer >= 1"],
    ),
    Case(
        "dropout 1.5",
        train("dropout=1.5"),
        says=["dropout=1.5 is out of range: it must be a number in [0, 1)"],
    ),
    Case(
        "a negative hidden size",
        train("model.net.hidden_size=-3"),
        says=["model.net.hidden_size=-3 is out of range"],
    ),
    Case(
        "a text where a number goes",
        train("data.max_len=fifty"),
        says=["data.max_len='fifty' is out of range"],
    ),
    Case(
        "local window D=0",
        train("attention=local_p", "model.net.attention.D=0"),
        says=["model.net.attention.D=0 is out of range"],
    ),
    Case(
        "beam size 0 in training",
        train("callbacks.beam_bleu.beam=0"),
        says=["callbacks.beam_bleu.beam=0"],
    ),
    Case("0 threads", train("threads=0"), says=["threads=0 is out of range"]),
    Case(
        "an unknown attention",
        train("model.net.attention.name=cosine"),
        says=["attention='cosine' is unknown"],
    ),
    Case(
        "local-p with the location score",
        train("attention=local_p", "score=location"),
        says=["attention=local_p score=location"],
    ),
    Case(
        "label smoothing 1",
        train("model.label_smoothing=1.0"),
        says=["model.label_smoothing=1.0 is out of range"],
    ),
    Case("0 epochs", train("trainer.max_epochs=0"), says=["trainer.max_epochs=0 is out of range"]),
    Case(
        "an option the model does not have",
        train("+model.net.impl=turbo"),
        says=["model.net.impl is not an option of luong_lit.nn.Seq2Seq", "hidden_size"],
    ),
    Case(
        "a negative checkpoint interval",
        train("callbacks.checkpoint.every_n_minutes=-1"),
        says=["callbacks.checkpoint.every_n_minutes=-1"],
    ),
    Case("an unknown config group option", train("optim=adamw"), says=["cannot compose", "optim"]),
    Case(
        "a seed below 0",
        train("seed=-1"),
        says=["seed=-1 is out of range: it must be an integer from 0 to 4294967295"],
    ),
    Case("a seed that is no number", train("seed=abc"), says=["seed='abc' is out of range"]),
    Case(
        "a number for a config group",
        train("attention=5"),
        says=["attention=5 is not an option of attention (options: global, local_m"],
    ),
    # ------------------------------------------------------------------ sweeps (-m)
    Case(
        "a SLURM sweep on a machine without SLURM",
        sweep("hydra/launcher=submitit_slurm", "seed=1,2"),
        says=["hydra/launcher=submitit_slurm: SLURM's srun is not on this machine"],
        needs_no_slurm=True,
    ),
    Case(
        "a sweep whose launcher cannot start",
        sweep("hydra/launcher=joblib", NO_PLUGIN, "seed=1,2"),
        says=["hydra/launcher=joblib cannot start", "Unknown plugin class", "[launchers]"],
    ),
    Case(
        "a sweep over a number for a config group",
        sweep("attention=global,5"),
        says=["attention=5 is not an option of attention"],
    ),
    Case(
        "a sweep over an option that does not exist, after the first",
        sweep("attention=global,local_p", "optim=adam,adamw"),
        says=["optim=adamw is not an option of optim; did you mean adam?"],
    ),
    Case(
        "-m after the overrides",
        sweep("score=dot,generl", m_last=True),
        says=["score=generl is not an option of score; did you mean general?"],
    ),
    # ------------------------------------------------------------------ checkpoints
    Case(
        "a missing checkpoint",
        on_checkpoint("gone.ckpt"),
        says=["{dir}/gone.ckpt: checkpoint does not exist"],
    ),
    Case(
        "best.ckpt of a run that has only last.ckpt",
        lambda ctx: ["translate", f"{ctx['dir']}/run/checkpoints/best.ckpt", "--quiet"],
        says=[
            "best.ckpt: checkpoint does not exist; its folder holds last.ckpt",
            "until then use {dir}/run/checkpoints/last.ckpt",
        ],
        prepare=lambda d: shutil.copytree(
            PRECIOUS / "run" / "checkpoints",
            d / "run" / "checkpoints",
            ignore=lambda folder, names: [n for n in names if n != "last.ckpt"],
        ),
        stdin=b"a\n",
    ),
    Case(
        "a run folder given as a checkpoint",
        lambda ctx: ["translate", str(PRECIOUS / "run"), "--quiet"],
        says=["/run is a folder, not a checkpoint file; its checkpoints: ", "checkpoints/last"],
        stdin=b"a\n",
    ),
    Case(
        "a file that is not a checkpoint",
        on_checkpoint("junk.ckpt"),
        says=["{dir}/junk.ckpt: not a readable checkpoint"],
        prepare=corpus_file("junk.ckpt", b"not a checkpoint" * 100),
    ),
    Case(
        "a checkpoint that would run code",
        on_checkpoint("code.ckpt"),
        says=["{dir}/code.ckpt: refused: it holds an object of"],
        prepare=lambda d: torch.save({"luong_lit": {"net": {}}, "x": _Code()}, d / "code.ckpt"),
    ),
    Case(
        "a truncated checkpoint",
        on_checkpoint("half.ckpt"),
        says=["{dir}/half.ckpt: not a readable checkpoint"],
        prepare=lambda d: (d / "half.ckpt").write_bytes(
            (PRECIOUS / "run/checkpoints/last.ckpt").read_bytes()[:5000]
        ),
    ),
    Case(
        "a model description naming another class",
        on_checkpoint("evil.ckpt", "evaluate"),
        says=["{dir}/evil.ckpt: checkpoint config net"],
        prepare=damaged_checkpoint(
            "evil.ckpt", lambda c: c["luong_lit"]["net"].update(score={"_target_": "os.system"})
        ),
    ),
    Case(
        "weights that do not fit",
        on_checkpoint("shape.ckpt"),
        says=["{dir}/shape.ckpt: its weights do not fit"],
        prepare=damaged_checkpoint(
            "shape.ckpt", lambda c: c["luong_lit"]["net"].update(hidden_size=12, embed_size=12)
        ),
    ),
    # ------------------------------------------------------------------ command-line input
    Case(
        "beam 0",
        translate("--beam", "0"),
        says=["--beam must be an integer >= 1"],
        stdin=b"a b\n",
    ),
    Case(
        "0 workers",
        translate("--workers", "0"),
        says=["--workers must be an integer >= 1"],
        stdin=b"a b\n",
    ),
    Case(
        "length ratios the wrong way round",
        translate("--min-len-ratio", "2", "--max-len-ratio", "1"),
        says=["--min-len-ratio 2.0 and --max-len-ratio 1.0"],
        stdin=b"a b\n",
    ),
    Case(
        "an n-best list longer than the beam",
        translate("--n-best", "3", "--beam", "2"),
        says=["--n-best 3 needs a beam of at least 3"],
        stdin=b"a\n",
    ),
    Case(
        "a length penalty that is not one",
        translate("--length-penalty", "long"),
        says=["--length-penalty: length penalty must be none, avg or a number"],
        stdin=b"a\n",
    ),
    Case(
        "0 threads when translating",
        translate("--threads", "0"),
        says=["--threads must be at least 1"],
        stdin=b"a\n",
    ),
    Case(
        "--max-src-len 0",
        translate("--max-src-len", "0"),
        says=["--max-src-len must be an integer >= 1"],
        stdin=b"a\n",
    ),
    Case(
        "input that is not UTF-8",
        translate(),
        says=["<stdin>:2: not valid UTF-8"],
        stdin=b"a b\n\xff\xfe\n",
    ),
    Case(
        "an input file that does not exist",
        lambda ctx: translate("-i", f"{ctx['dir']}/none.txt")(ctx),
        says=["{dir}/none.txt: file does not exist"],
    ),
    Case("an unknown command", lambda ctx: ["frobnicate"], says=["unknown command 'frobnicate'"]),
    Case(
        "a misspelt command",
        lambda ctx: ["tranlate", ctx["ckpt"]],
        says=["unknown command 'tranlate'; did you mean translate?"],
    ),
    Case(
        "a server that may hold no request",
        lambda ctx: ["serve", ctx["ckpt"], "--max-queue", "0"],
        says=["--max-queue must be an integer >= 1, got 0"],
    ),
    Case(
        "a report of a folder that does not exist",
        lambda ctx: ["report", f"{ctx['dir']}/nowhere"],
        says=["{dir}/nowhere: does not exist"],
    ),
    Case("no command at all", lambda ctx: [], says=["error: name a command"]),
    Case("good input translates", translate("--beam", "2"), status=0, stdin=b"a b c\n\nd e\n"),
    # ------------------------------------------------------------------ a new user's first hour
    Case(
        "an output file in a folder that does not exist",
        lambda ctx: translate("-o", f"{ctx['dir']}/no/such/out.txt")(ctx),
        says=["-o {dir}/no/such/out.txt: the folder {dir}/no/such does not exist"],
        stdin=b"a b\n",
    ),
    Case(
        "a key the model does not take",
        train("+model.net.no_such_key=3"),
        says=["model.net.no_such_key is not an option of luong_lit.nn.Seq2Seq", "its options:"],
    ),
    Case(
        "a hidden size that a tied output matrix does not have",
        train("model.net.tie_output=true", "model.net.hidden_size=16"),
        says=[
            "model.net.tie_output=true: the target embedding (model.net.embed_size=8)",
            "also set model.net.embed_size=16, or set model.net.tie_output=false",
        ],
    ),
    Case(
        "a misspelt group",
        train("atention=global"),
        says=["atention is neither a config group nor a key", "did you mean attention?"],
    ),
    Case(
        "a misspelt key of the group the user chose",
        train("schedule=halving", "model.scheduler.aftr=3"),  # the main job decays linearly
        says=["model.scheduler.aftr is neither", "did you mean model.scheduler.after?"],
    ),
    Case(
        "a misspelt option of a group",
        train("attention=globl"),
        says=["attention=globl is not an option of attention; did you mean global?"],
    ),
    Case(
        "resuming a run with another model",
        train("ckpt_path=last", "attention=local_p"),
        says=[
            "run/checkpoints/last.ckpt was trained with attention=global",
            "asks for attention=local_p",
            "Resume it as it was: python -m luong_lit.train",
        ],  # fmt: skip
        prepare=lambda d: shutil.copytree(PRECIOUS / "run", d / "run"),
    ),
    Case(
        "ckpt_path names no file",
        lambda ctx: train(f"ckpt_path={ctx['dir']}/none.ckpt")(ctx),
        says=["ckpt_path={dir}/none.ckpt: no such file"],
    ),
    Case(
        "ckpt_path names a run's folder",
        lambda ctx: train(f"ckpt_path={ctx['dir']}/old")(ctx),
        says=[
            "ckpt_path={dir}/old is a folder, not a checkpoint file",
            "hydra.run.dir={dir}/old ckpt_path=last",
        ],  # fmt: skip
        prepare=lambda d: shutil.copytree(PRECIOUS / "run", d / "old"),
    ),
    Case(
        "ckpt_path in a sweep's job folder, unquoted",
        lambda ctx: train(f"ckpt_path={ctx['dir']}/0_a=b,c=d/checkpoints/last.ckpt")(ctx),
        says=["the value of ckpt_path holds '=' or ','", "quote it, e.g. 'ckpt_path=\"{dir}/0_a"],
    ),
    Case(
        "a new run into the folder of a finished one",
        train(),
        says=["{dir}/run holds a finished run (results.json)", "overwrite=true replaces it"],
        prepare=lambda d: (
            shutil.copytree(PRECIOUS / "run", d / "run"),
            (d / "run" / "results.json").write_text("{}"),
        ),  # fmt: skip
    ),
    Case(
        "a new run into the folder of an interrupted one",
        train(),
        says=[
            "{dir}/run holds a run without results.json (checkpoints/last.ckpt at step",
            "resume it with: python -m luong_lit.train",
            "ckpt_path=last",
        ],  # fmt: skip
        prepare=lambda d: (
            shutil.copytree(PRECIOUS / "run", d / "run"),
            (d / "run" / "results.json").unlink(),
        ),  # fmt: skip
    ),
    Case(
        "trainer=gpu on a machine without one",
        train("trainer=gpu"),
        says=["trainer=gpu asks for a CUDA GPU", "train on the CPU with trainer=cpu"],
        needs_no_gpu=True,
    ),
    Case(
        "a control character in the text to translate",
        translate(),
        says=["<stdin>:2: control character U+0001 at column 2"],
        stdin=b"a b\nc\x01d\n",
    ),
    Case(
        "a CUDA device on a machine without one",
        translate("--device", "cuda"),
        says=["--device cuda: this machine has no CUDA GPU (use cpu)"],
        stdin=b"a\n",
        needs_no_gpu=True,
    ),
    Case(
        "a device that is none",
        translate("--device", "gpu0"),
        says=["--device 'gpu0' is not a device"],
        stdin=b"a\n",
    ),
    Case(
        "space-like characters in the text to translate",
        translate("--beam", "2"),
        status=0,
        stdin="a\tb\x0bc\x0cd\u0085e\u2028f\u2029g\u200bh\n".encode(),
    ),
]


def digest_tree(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


PRECIOUS: Path = Path()


@pytest.fixture(scope="module")
def ctx(tmp_path_factory):
    """A trained tiny run and its corpus: what must survive every case unchanged."""
    global PRECIOUS
    PRECIOUS = tmp_path_factory.mktemp("precious")
    corpus = {
        "train": write_corpus(PRECIOUS / "data", "train", 64, 1),
        "dev": write_corpus(PRECIOUS / "data", "dev", 8, 2),
    }
    test = write_corpus(PRECIOUS / "data", "test", 6, 3)
    overrides = tiny_overrides(corpus) + [
        "trainer.max_epochs=1",
        f"+data.test.toy.src={test['src']}",
        f"+data.test.toy.tgt={test['tgt']}",
    ]
    from luong_lit.training.run import train as run_training

    run_training(compose_cfg(overrides, PRECIOUS / "run"))
    return {
        "overrides": overrides,
        "ckpt": str(PRECIOUS / "run" / "checkpoints" / "last.ckpt"),
        "digest": digest_tree(PRECIOUS),
    }


def test_cli_reports_bad_data_without_traceback(toy_corpus, tmp_path):
    args = [a for a in tiny_overrides(toy_corpus) if not a.startswith("data.train.src")]
    missing = [f"data.train.src={tmp_path}/missing.en", f"hydra.run.dir={tmp_path}/run"]
    res = run_cli(["train", *args, *missing], stdin="")
    assert res.returncode == 2
    assert f"error: {tmp_path}/missing.en: file does not exist" in res.stderr
    assert "Traceback" not in res.stderr


#: a case of what a machine without a GPU says does not apply where there is one
NO_GPU_HERE = pytest.mark.skipif(
    torch.cuda.is_available(), reason="this machine has a GPU: asking for one is no mistake here"
)
NO_SLURM_HERE = pytest.mark.skipif(shutil.which("srun") is not None, reason="SLURM is here")


def marks(case: Case) -> list:
    return [NO_GPU_HERE] * case.needs_no_gpu + [NO_SLURM_HERE] * case.needs_no_slurm


@pytest.mark.parametrize(
    "case", [pytest.param(c, marks=marks(c)) for c in CASES], ids=[c.name for c in CASES]
)
def test_robustness(case: Case, ctx, tmp_path):
    if case.prepare:
        case.prepare(tmp_path)
    had_run = (tmp_path / "run").exists()
    res = run_here(case.args({**ctx, "dir": tmp_path}), case.stdin)
    err = res.stderr.decode("utf-8", "replace")
    assert res.returncode == case.status, err[-3000:]
    assert "Traceback" not in err
    for text in case.says:
        assert text.format(dir=tmp_path) in err, err[-3000:]
    if case.status == 2:  # one paragraph: a single "error:" line
        assert sum(line.startswith("error: ") for line in err.splitlines()) == 1, err[-3000:]
        assert (tmp_path / "run").exists() == had_run  # a refused run leaves no folder
    assert digest_tree(PRECIOUS) == ctx["digest"]  # nothing made before was changed or lost


@pytest.mark.slow
def test_ctrl_c_saves_the_step_and_a_resume_finishes(ctx, tmp_path):
    """SIGINT (Ctrl-C) in training: the step ends, last.ckpt is written, the exit is clean, and
    the printed resume command works as given (the run's overrides read from its folder; one
    that a resume may change, added), for a directory named like a sweep job's."""
    run_dir = tmp_path / "0_attention=global,score=dot"
    args = [
        "train",
        *ctx["overrides"],
        "trainer.max_epochs=200",
        f'hydra.run.dir="{run_dir}"',
        "logger=csv",
    ]
    env = {**os.environ, "PYTHONWARNINGS": "ignore", "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "luong_lit", *args],
        cwd=REPO,
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    ckpt = run_dir / "checkpoints" / "last.ckpt"
    deadline = time.time() + 240
    while not ckpt.exists() and time.time() < deadline and proc.poll() is None:
        time.sleep(0.05)  # the first epoch has ended
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 128 + signal.SIGINT, err[-2000:]
    assert "interrupted by signal 2" in err and "Traceback" not in err
    assert "weights_only" not in err  # Lightning's notice of its default, on saving
    step = torch.load(ckpt, weights_only=True)["global_step"]
    assert step > 0
    printed = shlex.split(err.split("resume with: ", 1)[1].splitlines()[0])
    assert printed[:3] == ["python", "-m", "luong_lit.train"] and printed[-1] == "ckpt_path=last"
    done = run_cli(["train", *printed[3:], "trainer.max_epochs=2"])  # as printed, and shorter
    assert done.returncode == 0, done.stderr[-2000:]
    assert torch.load(ckpt, weights_only=True)["global_step"] > step


# ------------------------------------------------------------------ every door answers
def test_a_short_run_ends_with_its_folder_and_a_checkpoint_that_translates(ctx, tmp_path):
    """Stopped before its first validation, a run has no best.ckpt: its last lines name the
    folder and the checkpoint to use, and that checkpoint translates."""
    run_dir = tmp_path / "short"
    res = run_here(["train", *ctx["overrides"], "trainer.max_steps=2", f"hydra.run.dir={run_dir}"])
    out = res.stdout.decode()
    assert res.returncode == 0, res.stderr.decode()[-2000:]
    ckpt = run_dir.resolve() / "checkpoints" / "last.ckpt"
    assert not (run_dir / "checkpoints" / "best.ckpt").exists()
    assert f"run folder: {run_dir.resolve()}" in out
    assert f"checkpoint to use: {ckpt} (no validation has run yet" in out
    assert f"translate with: python -m luong_lit translate {ckpt}" in out
    assert run_here(["translate", str(ckpt), "--quiet"], b"a b\n").returncode == 0


def test_a_finished_run_names_its_best_checkpoint(ctx, tmp_path):
    run_dir = tmp_path / "full"
    res = run_here(["train", *ctx["overrides"], f"hydra.run.dir={run_dir}"])
    best = run_dir.resolve() / "checkpoints" / "best.ckpt"
    assert res.returncode == 0 and best.is_file()
    assert f"checkpoint to use: {best} (best by validation perplexity)" in res.stdout.decode()


def test_logger_wandb_without_wandb_is_one_line_with_the_extras_install(ctx, tmp_path, monkeypatch):
    """What Lightning raises when wandb is missing (its own requirement check), as a user
    without the extra sees it: our line, exit 2, the README's install command, never -U."""
    import lightning.pytorch.loggers.wandb as lightning_wandb

    class Missing:  # Lightning's RequirementCache for a package that is not installed
        def __bool__(self):
            return False

        def __str__(self):
            return (
                "Requirement 'wandb>=0.12.10' not met. HINT: Try running "
                "`pip install -U 'wandb>=0.12.10'`"
            )

    monkeypatch.setattr(lightning_wandb, "_WANDB_AVAILABLE", Missing())
    res = run_here(["train", *ctx["overrides"], "logger=wandb", f"hydra.run.dir={tmp_path}/run"])
    err = res.stderr.decode()
    assert res.returncode == 2, err[-2000:]
    assert (
        'error: logger.wandb needs wandb, which is not installed: pip install -e ".[wandb]"' in err
    )
    assert "-U" not in err and "Traceback" not in err
    assert not (tmp_path / "run").exists()


def test_serve_on_a_port_in_use_says_so_before_loading_any_model(ctx, tmp_path):
    import socket

    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    port = taken.getsockname()[1]
    try:  # a checkpoint that does not exist: the port is checked first, before any loading
        res = run_here(["serve", str(tmp_path / "gone.ckpt"), "--port", str(port)])
    finally:
        taken.close()
    err = res.stderr.decode()
    assert res.returncode == 2 and "Traceback" not in err
    assert (
        err.strip()
        == f"error: --host 127.0.0.1 --port {port}: the address is in use (another server?)"
    )


def test_interactive_translate_says_when_it_is_ready_to_read(ctx):
    res = run_here(["translate", ctx["ckpt"], "--interactive", "--beam", "2"], b"a b\n")
    assert res.returncode == 0
    assert res.stderr.decode().splitlines()[-1].startswith("ready: type a sentence")
    assert len(res.stdout.decode().splitlines()) == 1


def test_show_attention_with_an_n_best_list_follows_each_list(ctx):
    base = ["translate", ctx["ckpt"], "--quiet", "--beam", "2", "--show-attention"]
    plain = run_here(base, b"a b\nc\n").stdout.decode().splitlines()  # text, attention, ...
    listed = run_here([*base, "--n-best", "2"], b"a b\nc\n").stdout.decode().splitlines()
    assert len(listed) == 6 and [x.split(" ||| ")[0] for x in listed] == [
        "0", "0", listed[2], "1", "1", listed[5],
    ]  # fmt: skip
    assert (listed[2], listed[5]) == (plain[1], plain[3])  # the best's attention
    assert listed[0].split(" ||| ")[1] == plain[0]


def test_show_attention_with_an_output_file_keeps_the_file_to_translations(ctx, tmp_path):
    base = ["translate", ctx["ckpt"], "--quiet", "--beam", "2"]
    plain = run_here(base, b"a b\nc\n").stdout.decode().splitlines()
    shown = run_here([*base, "--show-attention"], b"a b\nc\n").stdout.decode().splitlines()
    res = run_here([*base, "--show-attention", "-o", str(tmp_path / "out.txt")], b"a b\nc\n")
    assert (tmp_path / "out.txt").read_text().splitlines() == plain
    assert res.stdout.decode().splitlines() == shown[1::2]


def test_evaluate_defaults_to_the_checkpoints_test_sets_and_writes_here(ctx, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    res = run_here(["evaluate", ctx["ckpt"], "--quiet", "--beam", "2"])
    assert res.returncode == 0, res.stderr.decode()[-2000:]
    assert (tmp_path / "eval_toy.json").is_file()  # "toy": the training config's test set
    assert f"wrote {tmp_path.resolve() / 'eval_toy.md'}" in res.stdout.decode()
    assert digest_tree(PRECIOUS) == ctx["digest"]  # nothing written beside the checkpoint


def test_align_writes_here_and_says_where(ctx, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    test = write_corpus(tmp_path / "data", "test", 4, 3)
    res = run_here(["align", ctx["ckpt"], "--src", test["src"], "--tgt", test["tgt"]])
    assert res.returncode == 0, res.stderr.decode()[-2000:]
    here = tmp_path.resolve()
    assert len((here / "alignments.txt").read_text().splitlines()) == 4
    said = res.stdout.decode().splitlines()  # where, and the report in a line: its JSON, a file
    assert said == [f"wrote {here / 'alignments.txt'}, {here / 'align.json'}",
                    "4 sentences, paper convention (tokens read as <unk>: 0.0%)"]  # fmt: skip
    assert "aligning: 100%" in res.stderr.decode() and "4/4" in res.stderr.decode()  # tqdm's bar
    assert digest_tree(PRECIOUS) == ctx["digest"]


def test_a_mixed_ensemble_is_refused_before_any_decoding(ctx, tmp_path, monkeypatch):
    """Location and content-based members cannot give one alignment (footnote 14): what needs
    one (evaluate's unk replacement, translate --replace-unk) is refused at once, not after
    decoding a whole test set."""
    from luong_lit.inference import Inference
    from luong_lit.training.run import train as run_training

    extra = ["score=location", "test_after_training=false"]
    run_training(compose_cfg(ctx["overrides"] + extra, tmp_path / "loc"))
    location = str(tmp_path / "loc" / "checkpoints" / "last.ckpt")

    def never(*args, **kwargs):
        raise AssertionError("decoded before refusing")

    monkeypatch.setattr(Inference, "split", never)
    monkeypatch.setattr(Inference, "decode", never)
    for args in (
        ["evaluate", ctx["ckpt"], location, "--test", "toy", "--out", str(tmp_path)],
        ["translate", ctx["ckpt"], location, "--replace-unk", "--quiet"],
    ):
        err = run_here(args, b"a b\n").stderr.decode()
        assert "error: the ensemble mixes location and content-based scores" in err, err[-2000:]
    monkeypatch.undo()  # without unk replacement the same ensemble translates
    assert run_here(["translate", ctx["ckpt"], location, "--quiet"], b"a b\n").returncode == 0


NOISE = {  # a library's routine notice -> what it says
    "Lightning's litlogger tip": "litlogger",
    "torch's LeafSpec deprecation (on resume)": "LeafSpec",
    "no val/ppl before the first validation": "could not find the monitored key",
    "Lightning's weights_only default": "weights_only",
    "wandb's anonymous setting": "anonymous",
    "Lightning's GPU line, on every run": "GPU available:",
    "Lightning's TPU line, on every run": "TPU available:",
    "Lightning's HPU line": "HPU available:",
    "Lightning's checkpoint folder warning, on every resume": "exists and is not empty",
    "colour codes of W&B's lines in a log file": "\x1b[",
    "the joblib launcher's ConfigStore notice, once per worker": "ConfigStore schema",
    "Lightning's restore lines, on every resume and test": "from the checkpoint",
    "Lightning's fit-stopped line": "`Trainer.fit` stopped",
}


def test_a_run_and_its_resume_print_our_lines_not_the_libraries_notices(ctx, tmp_path):
    """With warnings shown as Python shows them by default (no PYTHONWARNINGS), with W&B
    (offline) and a resume: none of the routine notices."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"}
    env |= {"OMP_NUM_THREADS": "1", "WANDB_SILENT": "false"}
    base = [sys.executable, "-m", "luong_lit", "train", *ctx["overrides"], "logger=wandb",
            f"hydra.run.dir={tmp_path}/run"]  # fmt: skip
    said = ""
    for extra in (["trainer.max_steps=2"], ["trainer.max_steps=4", "ckpt_path=last"]):
        res = subprocess.run([*base, *extra], cwd=tmp_path, env=env, capture_output=True,
                             text=True, timeout=300)  # fmt: skip
        assert res.returncode == 0, res.stderr[-3000:]
        said += res.stdout + res.stderr
    assert "run folder:" in said and "resuming from" in said and "at step 2" in said
    assert {k: v for k, v in NOISE.items() if v in said} == {}, said[-4000:]
    assert f"W&B run saved offline in {tmp_path}/run/wandb/offline-run-" in said  # ours, plain


@pytest.mark.slow
@pytest.mark.long  # a sweep's own lines: test_sweeps' joblib tests run its launcher in CI
def test_a_joblib_sweep_prints_our_lines_not_the_libraries_notices(ctx, tmp_path):
    """Jobs in joblib's worker processes: none of the routine notices either (the workers
    filter them as this process does)."""
    pytest.importorskip("hydra_plugins.hydra_joblib_launcher")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"}
    res = subprocess.run(
        [sys.executable, "-m", "luong_lit", "train", "-m", *ctx["overrides"],
         "++trainer.max_steps=1", "test_after_training=false", "seed=1,2",
         "hydra/launcher=joblib", "hydra.launcher.n_jobs=2", f"hydra.sweep.dir={tmp_path}/sweep"],
        cwd=tmp_path, env={**env, "OMP_NUM_THREADS": "1"}, capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip
    said = res.stdout + res.stderr
    assert res.returncode == 0, said[-3000:]
    assert said.count("run folder: ") == 4  # each job's first and last lines
    assert {k: v for k, v in NOISE.items() if v in said} == {}, said[-4000:]


# ------------------------------------------------------------------ the Python API's door
API_CASES = [  # (call, what the UsageError says)
    (lambda m: m.n_best(["a"], 0), "n must be an integer >= 1, got 0"),
    (lambda m: m.n_best(["a"], True), "n must be an integer >= 1, got True"),
    (lambda m: m.attention(["a", "b"]), "text must be one str, got list"),
    (lambda m: m.translate([42]), "texts[0] must be a str, got int (42)"),
    (lambda m: m.translate([b"A man."]), "texts[0] is bytes: give text (str)"),
    (lambda m: m.translate(b"A man."), "texts is bytes: give text (str)"),
    (lambda m: m.translate(42), "texts must be a str or a sequence of str, got int"),
    (lambda m: m.translate({"a": 1}), "texts must be a str or a sequence of str, got dict"),
    (lambda m: m.translate(["a", "b\x01c"]), "texts[1]: control character U+0001 at column 2"),
    (lambda m: m.translate("a\nb"), "texts holds a line break; give one sentence per item"),
    (lambda m: m.score(["a"], [3]), "tgt[0] must be a str, got int"),
    (lambda m: m.align("a", ["b", "c"]), "1 sources but 2 targets"),
    (lambda m: m.translate(["a"], bem=2), "bem is not an option of SearchOptions; its options"),
    (lambda m: m.translate(["a"], beam=0), "beam must be an integer >= 1, got 0"),
    (lambda m: m.translate(["a"], replace_unk="no"), "replace_unk must be True or False, got 'no'"),
]


@pytest.mark.parametrize("call,says", API_CASES, ids=[c[1][:40] for c in API_CASES])
def test_the_api_checks_its_arguments_and_names_them(ctx, call, says):
    import luong_lit
    from luong_lit.errors import UsageError

    model = luong_lit.load(ctx["ckpt"], beam=2)
    with pytest.raises(UsageError) as caught:
        call(model)
    assert says in str(caught.value)


@pytest.mark.parametrize(
    "args,says",
    [
        ((42,), "checkpoints must be a path or a non-empty list of paths"),
        (([],), "checkpoints must be a path or a non-empty list of paths"),
        (("CKPT",), "beem is not an option of load; its options: checkpoints,"),
    ],
)
def test_load_checks_its_arguments(ctx, args, says):
    import luong_lit
    from luong_lit.errors import UsageError

    extra = {"beem": 3} if args == ("CKPT",) else {}
    args = tuple(ctx["ckpt"] if a == "CKPT" else a for a in args)
    with pytest.raises(UsageError, match=re.escape(says)):
        luong_lit.load(*args, **extra)


@pytest.mark.parametrize(
    "option,value", [("replace_unk", "no"), ("pretokenized", "false"), ("authors_decoder", 1)]
)
def test_a_true_false_option_takes_true_or_false_only(ctx, option, value):
    """One policy for booleans: the API takes a bool, as the server's JSON takes true or false
    and the command line's flags give one; anything else is refused, named with its value."""
    import luong_lit
    from luong_lit.errors import UsageError

    says = f"{option} must be True or False, got {value!r}"
    with pytest.raises(UsageError, match=re.escape(says)):
        luong_lit.load(ctx["ckpt"], **{option: value})


def test_a_bug_in_a_run_keeps_its_traceback(tmp_path, monkeypatch):
    """Only Hydra's own errors become one line: an error of the run itself is a bug."""

    def broken(cfg):
        try:
            raise AttributeError("the first fault")
        except AttributeError:  # as Lightning's teardown raises over a step's error
            raise RuntimeError("a bug in the run")  # noqa: B904 - chained as its context

    monkeypatch.setattr("luong_lit.commands.train.train", broken)
    with pytest.raises(RuntimeError, match="a bug in the run"):
        run_here(["train", f"hydra.run.dir={tmp_path}/run"])
    # train.log keeps the whole chain (a joblib sweep's job reports the last error alone)
    kept = (tmp_path / "run" / "train.log").read_text()
    assert "AttributeError: the first fault" in kept and "RuntimeError: a bug in the run" in kept


def test_hydra_full_error_gives_hydras_traceback(tmp_path, monkeypatch):
    monkeypatch.setenv("HYDRA_FULL_ERROR", "1")
    args = ["train", "-m", f"hydra.sweep.dir={tmp_path}/sweep", "hydra/launcher=joblib", NO_PLUGIN]
    with pytest.raises(RuntimeError, match="Unknown plugin class"):
        run_here(args)
    assert os.environ["HYDRA_FULL_ERROR"] == "1"


def test_load_takes_every_option_translate_takes(ctx):
    """The README: ``load`` takes ``translate``'s options (load-time and per-call alike)."""
    import luong_lit

    model = luong_lit.load(ctx["ckpt"], beam=3, n_best=3, replace_unk=True, batch_size=2)
    assert [len(h) for h in model.n_best(["a b", "c"], 3)] == [3, 3]
    assert model.translate(["a b"]) == luong_lit.load(ctx["ckpt"], beam=3).translate(
        ["a b"], replace_unk=True
    )


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a GPU")
def test_load_on_cuda_without_a_gpu_says_there_is_none(ctx):
    import luong_lit
    from luong_lit.errors import UsageError

    with pytest.raises(UsageError, match="device cuda: this machine has no CUDA GPU"):
        luong_lit.load(ctx["ckpt"], device="cuda")


def test_the_api_and_the_command_line_read_text_by_one_policy(ctx):
    """Space-like characters are spaces for both; another control character is refused by
    both, with the same words."""
    import luong_lit
    from luong_lit.errors import UsageError

    model = luong_lit.load(ctx["ckpt"], beam=2)
    cli = run_here(["translate", ctx["ckpt"], "--quiet", "--beam", "2"], "a\x0bb\u2028c\n".encode())
    assert cli.stdout.decode().splitlines() == model.translate(["a\x0bb\u2028c"])
    refused = run_here(["translate", ctx["ckpt"], "--quiet"], b"a\x01b\n").stderr.decode()
    with pytest.raises(UsageError) as caught:
        model.translate(["a\x01b"])
    said = str(caught.value).split(": ", 1)[1]  # after where: texts[0] / <stdin>:1
    assert said.startswith("control character U+0001 at column 2") and said in refused


def test_the_table_has_at_least_30_cases():
    assert len(CASES) >= 30 and len({c.name for c in CASES}) == len(CASES)
