"""The kit installs anywhere: a wheel built from the source tree, installed into a fresh
virtual environment as the README says (``pip install -c constraints.txt WHEEL``), trains,
sweeps and translates from a directory outside the source tree.

The environment borrows the test environment's dependencies (torch, Lightning, Hydra, ...) so
that nothing is downloaded: pip installs the wheel with ``-c constraints.txt`` and no index, so
it finds them there and never chooses a torch of its own (the tested pin or nothing).
``luong_lit`` itself comes only from the wheel, and the test checks that it is that copy which
runs, with the pinned torch.
"""

from __future__ import annotations

import os
import shutil
import site
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from conftest import tiny_overrides, write_corpus

REPO = Path(__file__).resolve().parents[1]


def pinned_torch() -> str:
    """The torch version ``constraints.txt`` pins."""
    lines = (REPO / "constraints.txt").read_text(encoding="utf-8").splitlines()
    return next(line.split("==", 1)[1].strip() for line in lines if line.startswith("torch=="))


def _torch_version() -> str:
    import torch

    return torch.__version__.split("+")[0]


pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(  # never in CI, which installs the pin as the README says
        _torch_version() != pinned_torch(),
        reason="the README installs the wheel with -c constraints.txt, which pins the tested "
        "torch; pip would refuse this environment's other torch (e.g. a GPU machine's build)",
    ),
]


def run(cmd: list[str], cwd: Path, timeout: int = 300) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    res = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert res.returncode == 0, f"{cmd}\n{res.stdout[-2000:]}\n{res.stderr[-3000:]}"
    return res


@pytest.fixture(scope="session")  # once a worker, however xdist deals the tests
def installed(tmp_path_factory) -> Path:
    """The Python of a fresh virtual environment with the kit installed from its wheel."""
    root = tmp_path_factory.mktemp("wheel")
    source = root / "source"  # a copy: building writes build/ and egg-info beside the sources
    for folder in ("luong_lit", "conf", "notebooks"):  # what the wheel is built from
        skip = shutil.ignore_patterns("__pycache__")
        shutil.copytree(REPO / folder, source / folder, ignore=skip)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, source / name)
    run([sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "--no-build-isolation",
         "-q", "-w", str(root / "dist")], cwd=root)  # fmt: skip
    (wheel,) = (root / "dist").glob("luong_lit-*.whl")
    venv = root / "venv"
    run([sys.executable, "-m", "venv", "--without-pip", str(venv)], cwd=root)
    python = venv / "bin" / "python"
    where = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    purelib = Path(run([str(python), "-c", where], cwd=root).stdout.strip())
    ours = [sysconfig.get_paths()["purelib"], *site.getsitepackages()]
    (purelib / "borrowed_dependencies.pth").write_text("\n".join(dict.fromkeys(ours)) + "\n")
    run(readme_wheel_install(wheel, python), cwd=root)
    return python


def readme_wheel_install(wheel: Path, python: Path) -> list[str]:
    """The README's command that installs a wheel with the tested torch, run by this test's pip
    for ``python``'s environment, with no index (the dependencies are there already)."""
    shown = "`pip install -c constraints.txt dist/luong_lit-*.whl`"
    assert shown in (REPO / "README.md").read_text(encoding="utf-8"), f"the README shows no {shown}"
    pip = [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-index", "-q"]
    return [*pip, "-c", str(REPO / "constraints.txt"), str(wheel)]


def test_the_wheel_installs_with_the_pinned_torch(installed, tmp_path):
    """pip installed the wheel with the pinned torch (``-c constraints.txt``), never one it
    chose itself."""
    said = run([str(installed), "-c", "import torch; print(torch.__version__)"], cwd=tmp_path)
    assert said.stdout.strip().split("+")[0] == pinned_torch()


COMPOSE_ALL = """
import luong_lit.config as c
names = sorted(p.stem for p in (c.CONF_DIR / "experiment").glob("[!_]*.yaml"))
for name in names:
    c.compose([f"experiment={name}"])
print(c.CONF_DIR, len(names))
"""


def test_the_wheel_holds_the_configs_and_every_experiment_composes(installed, tmp_path):
    where, count = run([str(installed), "-c", COMPOSE_ALL], cwd=tmp_path).stdout.split()
    conf = Path(where)
    assert REPO not in conf.parents and (conf / "train.yaml").is_file()
    assert int(count) == len(list((REPO / "conf" / "experiment").glob("[!_]*.yaml")))


def test_the_wheel_writes_its_notebook_outside_the_source_tree(installed, tmp_path):
    out = run([str(installed), "-m", "luong_lit", "notebook", "nb"], cwd=tmp_path).stdout
    written = tmp_path / "nb" / "analysis.ipynb"
    assert written.read_bytes() == (REPO / "notebooks" / "analysis.ipynb").read_bytes(), out


def test_installed_kit_trains_sweeps_and_translates_outside_the_source_tree(installed, tmp_path):
    corpus = {
        "train": write_corpus(tmp_path / "data", "train", 48, 1),
        "dev": write_corpus(tmp_path / "data", "dev", 6, 2),
    }
    work = tmp_path / "work"
    work.mkdir()
    tiny = tiny_overrides(corpus) + ["trainer.max_epochs=1", "callbacks.beam_bleu.on_test=false"]
    py = str(installed)
    out = run([py, "-m", "luong_lit.train", *tiny, "hydra.run.dir=run"], cwd=work)
    assert (work / "run" / "checkpoints" / "best.ckpt").is_file(), out.stderr[-2000:]
    run([py, "-m", "luong_lit.train", "-m", *tiny, "debug=fdr", "hydra.sweep.dir=sweep",
         "attention=global,local_p"], cwd=work)  # fmt: skip
    assert len([p for p in (work / "sweep").iterdir() if (p / ".hydra").is_dir()]) == 2
    check = "import luong_lit, sys; print(luong_lit.__file__)"
    assert str(REPO) not in run([py, "-c", check], cwd=work).stdout
    res = subprocess.run(
        [py, "-m", "luong_lit", "translate", "run/checkpoints/best.ckpt", "--quiet"],
        cwd=work, input="a b c\n\nd e\n", capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr[-2000:]
    assert len(res.stdout.splitlines()) == 3
