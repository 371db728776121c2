"""Every path of this repository that a docstring, a comment, a config or a document names exists
(``tests/test_x.py::test_name``: the test too), so that a reader who follows one finds it."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TOP = "luong_lit|tests|docs|conf|notebooks|scripts"
PATH = re.compile(
    rf"(?<![\w/.-])((?:{TOP})/[\w./-]*?\.(?:py|md|yaml|ipynb|sh|txt|png|json|toml))(::\w+)?\b"
)
WHEEL = {"luong_lit/conf/": "conf/", "luong_lit/notebooks/": "notebooks/"}  # installed layout


def tracked_text_files() -> list[Path]:
    names = subprocess.run(
        ["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.split()
    kinds = (".py", ".md", ".yaml", ".ipynb", ".sh", ".toml", ".txt")
    return [REPO / n for n in names if n.endswith(kinds) and (REPO / n).is_file()]


def named_paths(text: str) -> list[tuple[str, str | None]]:
    """``(path, test name or None)`` for every repository path in ``text``."""
    return [(m.group(1), m.group(2)) for m in PATH.finditer(text) if "*" not in m.group(1)]


def missing_in(text: str) -> list[str]:
    found = []
    for path, test in named_paths(text):
        for installed, here in WHEEL.items():
            path = here + path[len(installed) :] if path.startswith(installed) else path
        target = REPO / path
        if not target.exists():
            found.append(path)
        elif test and not re.search(rf"def {test[2:]}\b", target.read_text("utf-8")):
            found.append(path + test)
    return found


def test_the_path_finder_reads_paths_as_written():
    text = "see `tests/test_x.py::test_y`, luong_lit/conf/train.yaml and a/docs/no.md"
    assert named_paths(text) == [
        ("tests/test_x.py", "::test_y"),
        ("luong_lit/conf/train.yaml", None),
    ]
    assert missing_in("`tests/test_nowhere.py` and conf/train.yaml") == ["tests/test_nowhere.py"]
    assert missing_in("tests/test_repository_paths.py::test_no_such_test") == [
        "tests/test_repository_paths.py::test_no_such_test"
    ]


def test_every_path_the_repository_names_exists():
    files = [f for f in tracked_text_files() if f != Path(__file__).resolve()]  # (its examples)
    broken = {
        str(f.relative_to(REPO)): missing
        for f in files
        if (missing := missing_in(f.read_text("utf-8", errors="replace")))
    }
    assert not broken, f"paths named but not in the repository: {broken}"


MODULE = re.compile(r"python3? -m ((?:luong_lit|scripts|studies|benchmarks|peers|gpu)(?:\.\w+)*)")


def missing_modules(text: str) -> list[str]:
    """The modules of this repository (and the tooling's former top-level names) that
    ``python -m NAME`` names in ``text`` and that do not exist here."""
    found = []
    for name in MODULE.findall(text):
        base = REPO / name.replace(".", "/")
        if not (base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()):
            found.append(name)
    return found


def test_the_module_finder_reads_commands_as_written():
    assert (
        missing_modules("python -m luong_lit.train and python -m scripts.studies.ladder_evals")
        == []
    )
    assert missing_modules("`python -m studies.ladder_evals LOGS`") == ["studies.ladder_evals"]


def test_every_module_a_command_names_exists():
    files = [f for f in tracked_text_files() if f != Path(__file__).resolve()]
    broken = {
        str(f.relative_to(REPO)): missing
        for f in files
        if (missing := missing_modules(f.read_text("utf-8", errors="replace")))
    }
    assert not broken, f"python -m names a module that is not in the repository: {broken}"
