"""The README's and the guide's code is run (``README.md``, ``docs/guide/*.md``): every command
of every ``bash`` block a user would paste runs here
on a tiny model (``RUN``, ``A.ckpt``, ``input.en``, ... stand for a toy run and its files; a
training command gets the toy corpus and a tiny model appended), or is one that a named test runs
(:data:`ELSEWHERE`, each entry naming that test), or stands in a block whose first line says
``# illustrative: <why>``. A command that is none of these fails the test: the documents cannot
drift from the kit unseen (a command shown on two pages runs once). Their Python blocks are run
by their own tests (``tests/test_translator.py``, ``tests/test_extending.py``); :data:`PYTHON`
says which.
"""

from __future__ import annotations

import contextlib
import io
import re
import shlex
import shutil
from pathlib import Path

import pytest
from conftest import REPO, run_here, tiny_overrides

DOCS = [REPO / "README.md", *sorted((REPO / "docs" / "guide").glob("*.md"))]

#: commands a test elsewhere runs, by how they start -> that test (``file::name``)
ELSEWHERE = {
    "python3 -m venv .venv": "the CI run itself (.ci/run installs as the README says)",
    ". .venv/bin/activate && python -m pytest": "the CI run itself (.ci/run runs this command)",
    "python -m luong_lit notebook &&": "tests/test_analysis.py::test_readme_notebook_command_runs_on_the_main_jobs_run_directory",  # noqa: E501
    "jupyter notebook": "tests/test_analysis.py::test_readme_notebook_command_runs_on_the_main_jobs_run_directory",  # noqa: E501
    "python -m luong_lit serve": "tests/test_serving.py::test_the_server_translates_as_the_api_does",  # noqa: E501
    "curl -s localhost:8080": "tests/test_serving.py::test_the_server_translates_as_the_api_does",  # noqa: E501
    "python -m luong_lit.train -m 'ablation=glob(*)' seed=1234,2 hydra/launcher=joblib": "tests/test_sweeps.py::test_joblib_runs_four_jobs_two_at_a_time_each_in_its_own_directory",  # noqa: E501
    "python -m luong_lit.train -m 'ladder=glob(": "tests/test_sweeps.py::test_joblib_runs_four_jobs_two_at_a_time_each_in_its_own_directory",  # noqa: E501
    "python -m luong_lit.train -m experiment=m30k_paper 'ladder=glob(": "tests/test_sweeps.py::test_joblib_runs_four_jobs_two_at_a_time_each_in_its_own_directory",  # noqa: E501
    "python -m luong_lit report logs/ladders": "tests/test_significance.py::test_report_reads_a_folder_of_kept_runs_and_its_table_is_well_formed",  # noqa: E501
    "python -m luong_lit align RUN/checkpoints/best.ckpt --rwth": "tests/test_alignment.py::test_align_cli_writes_pharaoh_links_and_aer",  # noqa: E501
    "python -m scripts.studies.ladder_evals": "tests/test_studies.py::test_ladder_evals_decodes_each_run_and_keeps_its_outputs",  # noqa: E501
    "python -m luong_lit --user-dir my_parts.py train": "tests/test_extending.py::test_a_run_with_a_user_dir_says_how_to_translate_with_it",  # noqa: E501
    "python -m luong_lit translate --user-dir": "tests/test_extending.py::test_a_run_with_a_user_dir_says_how_to_translate_with_it",  # noqa: E501
    "LUONG_LIT_USER_DIR=": "tests/test_extending.py::test_an_installed_package_with_an_entry_point_is_loaded_by_every_command",  # noqa: E501
}
#: commands that need what no test machine has, and why: a training command among them is
#: composed here as written (its config builds), not trained
UNRUNNABLE = {
    "trainer=gpu": "a CUDA GPU (scripts/gpu/run.sh runs it on one)",
    "hydra/launcher=submitit_slurm": "a SLURM cluster",
    "data=wmt14_ende": "the whole WMT'14 corpus",
    "experiment=align_": "its four corpora, minutes to prepare (the toy's cannot stand in)",
}
#: Python blocks: (the file, the heading they stand under) -> the test that runs them as written
PYTHON = {
    ("README.md", "## From Python"): "tests/test_translator.py::test_the_readme_example_runs",
    (
        "extending.md",
        "# Extending the kit",
    ): "tests/test_extending.py::test_the_readme_run_trains_on_a_named_corpus_from_local_files",  # noqa: E501
}


def blocks(path: Path) -> list[tuple[str, int, str, str]]:
    """Every fenced block of ``path``: ``(language, line, text, the heading it stands under)``."""
    found, section, lang, start, body = [], "", None, 0, []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if lang is None and line.startswith(("# ", "## ")):
            section = line
        if line.startswith("```"):
            if lang is None:
                lang, start, body = line[3:].strip(), number, []
            else:
                found.append((lang, start, "\n".join(body), section))
                lang = None
        elif lang is not None:
            body.append(line)
    return found


def commands(text: str) -> list[str]:
    """A bash block's commands: continuation lines joined, comments and blank lines left out."""
    joined = re.sub(r"\\\n\s*", " ", text)
    out = []
    for line in joined.splitlines():
        line = line.split(" #")[0].rstrip() if " #" in line else line.rstrip()
        if line and not line.lstrip().startswith("#"):
            out.append(line)
    return out


def elsewhere(command: str) -> str | None:
    return next((test for start, test in ELSEWHERE.items() if command.startswith(start)), None)


def unrunnable(command: str) -> str | None:
    return next((why for key, why in UNRUNNABLE.items() if key in command), None)


def every_command() -> list[tuple[str, str]]:
    """``(where, command)`` of every command of every bash block that is not illustrative, each
    command once (where it is first shown)."""
    found: dict[str, str] = {}
    for path in DOCS:
        for lang, line, text, _ in blocks(path):
            if lang == "bash" and not text.startswith("# illustrative:"):
                for command in commands(text):
                    found.setdefault(command, f"{path.name}:{line}")
    return [(where, command) for command, where in found.items()]


def test_every_block_is_run_or_said_to_be_run_elsewhere():
    for path in DOCS:
        for lang, line, _, section in blocks(path):
            if lang == "python":
                assert (path.name, section) in PYTHON, (
                    f"{path.name}:{line}: a Python block no test runs"
                )
            elif lang not in ("bash", "toml", ""):
                raise AssertionError(f"{path.name}:{line}: a ```{lang} block: bash or python")
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    for where, command in every_command():  # what CI runs is what the README says
        if (elsewhere(command) or "").startswith("the CI run itself"):
            assert command in ci, (where, command)
    for test in {*ELSEWHERE.values(), *PYTHON.values()}:  # each named test exists
        if "::" in test:
            file, name = test.split("::")
            assert f"def {name}(" in (REPO / file).read_text(encoding="utf-8"), test


# ------------------------------------------------------------------ running the commands here
@pytest.fixture(scope="session")  # once a worker, however xdist deals the tests
def desk(toy_corpus, tmp_path_factory):
    """A folder as a user's: ``RUN`` (a toy run trained from the command line, with a test set),
    ``A.ckpt``, ``B.ckpt``, the input, prefix and dictionary files the commands name."""
    from conftest import write_corpus

    here = tmp_path_factory.mktemp("desk")
    test = write_corpus(here / "data", "test", 10, 3)
    res = run_here(["train", *tiny_overrides(toy_corpus), "trainer.max_epochs=2", "logger=csv",
                    "model.net.hidden_size=16", "model.net.embed_size=16",
                    f"+data.test.toy.src={test['src']}", f"+data.test.toy.tgt={test['tgt']}",
                    f"hydra.run.dir={here / 'RUN'}"])  # fmt: skip
    assert res.returncode == 0, res.stderr.decode()[-2000:]
    run = here / "RUN"
    for name in ("A.ckpt", "B.ckpt"):
        shutil.copy(run / "checkpoints" / "best.ckpt", here / name)
    lines = Path(test["src"]).read_text(encoding="utf-8")
    for name in ("input.en", "in"):
        (here / name).write_text(lines, encoding="utf-8")
    (here / "output.de").write_text(Path(test["tgt"]).read_text(encoding="utf-8"))
    (here / "starts.de").write_text("A\n" * len(lines.splitlines()), encoding="utf-8")
    (here / "dict.en-de.txt").write_text("a A\nb B\n", encoding="utf-8")
    epochs = here / "RUN" / "checkpoints" / "epochs"
    epochs.mkdir()
    for name in ("e08.ckpt", "e09.ckpt"):  # a run's epochs, as keep_last=2 leaves them
        shutil.copy(run / "checkpoints" / "best.ckpt", epochs / name)
    for name in ("RUN_A", "RUN_B"):
        (here / name).symlink_to(here / "RUN")
    lines = Path(test["src"]).read_text(encoding="utf-8")
    for name in ("input.en", "in"):
        (here / name).write_text(lines, encoding="utf-8")
    (here / "output.de").write_text(Path(test["tgt"]).read_text(encoding="utf-8"))
    (here / "starts.de").write_text("A\n" * len(lines.splitlines()), encoding="utf-8")
    (here / "dict.en-de.txt").write_text("a A\nb B\n", encoding="utf-8")
    return here


def as_run_here(command: str, desk: Path, corpus) -> tuple[list[str], bytes | None, str | None]:
    """``(luong_lit's arguments, standard input, file for standard output)`` of a command,
    with a training command given the toy corpus, a tiny model and a few steps."""
    command = command.replace("$RUN", "RUN").removeprefix(". .venv/bin/activate && ")
    stdin = None
    if command.startswith("echo "):
        said, command = command.split("|", 1)
        stdin = (shlex.split(said)[1] + "\n").encode()
    words = shlex.split(command)
    out = None
    if ">" in words:
        out = words[words.index(">") + 1]
        words = words[: words.index(">")]
    if "<" in words:
        stdin = (desk / words[words.index("<") + 1]).read_bytes()
        del words[words.index("<") : words.index("<") + 2]
    words = [w for w in words if w not in ("[--tokens]", "...")]
    if words[:3] == ["python", "-m", "luong_lit.train"]:
        words = ["python", "-m", "luong_lit", "train", *words[3:]]
        if "ckpt_path=last" in words:  # a resume keeps its run's settings: only a longer budget
            words += ["trainer.max_steps=4"]
        else:
            words += [*tiny_overrides(corpus), "++trainer.max_steps=3", "test_after_training=false",
                      "hydra.sweep.dir=sweep", "hydra.run.dir=" + _run_dir(words)]  # fmt: skip
    assert words[:3] == ["python", "-m", "luong_lit"], command
    return words[3:], stdin, out


def _run_dir(words: list[str]) -> str:
    given = next((w.split("=", 1)[1] for w in words if w.startswith("hydra.run.dir=")), None)
    return given or "logs/train/runs/new"


def composes(command: str) -> None:
    """A training command's config composes as written (a command of another kind: nothing)."""
    from luong_lit.config import compose

    words = shlex.split(command.removeprefix(". .venv/bin/activate && "))
    if words[:3] == ["python", "-m", "luong_lit.train"] and "-m" not in words:
        compose([w for w in words[3:] if "=" in w])


def python_c(command: str, desk: Path) -> str:
    code = shlex.split(command)[2].replace("$RUN", str(desk / "RUN"))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md", "exec"), {})
    return out.getvalue()


@pytest.fixture(scope="session")  # once a worker, however xdist deals the tests
def long_corpus(tmp_path_factory):
    """Toy pairs for 512 batches of 8: room for the README's ``val_check_interval=500``."""
    from conftest import write_corpus

    root = tmp_path_factory.mktemp("long")
    return {"train": write_corpus(root, "train", 4096, 7), "dev": write_corpus(root, "dev", 8, 8)}


def test_each_command_runs_here_on_a_tiny_model(desk, toy_corpus, long_corpus, monkeypatch):
    monkeypatch.chdir(desk)
    ran = []
    for where, command in every_command():
        if elsewhere(command):
            continue
        if unrunnable(command):
            composes(command)
            continue
        if command.startswith("python -c "):
            assert python_c(command, desk).strip(), (where, command)
        else:
            corpus = long_corpus if "val_check_interval" in command else toy_corpus
            args, stdin, out = as_run_here(command, desk, corpus)
            if "ckpt_path=last" in args:  # run X: a short run of the toy model, to resume
                short = ["train", *tiny_overrides(toy_corpus), "trainer.max_steps=2",
                         "hydra.run.dir=logs/train/runs/X"]  # fmt: skip
                assert run_here(short).returncode == 0
            res = run_here(args, stdin)
            said = res.stdout.decode() + res.stderr.decode()
            assert res.returncode == 0, (where, command, said[-2000:])
            if out:
                (desk / out).write_bytes(res.stdout)
            shutil.rmtree(desk / "logs" / "train" / "runs" / "new", ignore_errors=True)
        ran.append(command)
    assert len(ran) >= 15, ran  # most of the README runs here
