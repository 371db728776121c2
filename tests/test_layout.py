"""The package's structure: no import cycles, no command importing another, a plain nn/."""

from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "luong_lit"


def module_name(path: Path) -> str:
    return ".".join(path.relative_to(PKG.parent).with_suffix("").parts)


def imports_of(path: Path, modules: set[str]) -> set[str]:
    """Modules of the package that ``path`` imports, at module level or inside functions.

    ``from a.b import c`` counts as ``a.b.c`` when that is a module, else as ``a.b``.
    """
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("luong_lit"):
            subs = {f"{node.module}.{a.name}" for a in node.names} & modules
            found |= subs or ({node.module} & modules)
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names} & modules
    return found


def graph() -> dict[str, set[str]]:
    """Import edges between the package's modules; ``__init__`` files are left out (re-exports)."""
    files = {module_name(p): p for p in PKG.rglob("*.py") if p.name != "__init__.py"}
    return {m: imports_of(p, set(files)) - {m} for m, p in files.items()}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected group of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def test_the_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycles_between_modules():
    assert cycles(graph()) == []


def test_no_command_imports_another():
    edges = graph()
    commands = {m for m in edges if m.startswith("luong_lit.commands.")}
    for m in commands:
        assert not (edges[m] & commands), f"{m} imports {edges[m] & commands}"


def test_the_model_never_imports_lightning_or_other_parts_of_the_kit():
    """``luong_lit.nn`` is plain PyTorch: it imports nothing but itself and ``luong_lit.errors``."""
    for path in (PKG / "nn").rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            names += [a.name for a in node.names] if isinstance(node, ast.Import) else []
            for name in names:
                assert not name.startswith(("lightning", "pytorch_lightning")), f"{path}: {name}"
                if name.startswith("luong_lit"):
                    assert name.startswith(("luong_lit.nn", "luong_lit.errors")), f"{path}: {name}"
