"""Where a module reaches into Lightning's (or submitit's) non-public API, found in its source:
what ``tests/test_layout.py`` allows only in :mod:`luong_lit.training.lightning_internals`."""

from __future__ import annotations

import ast

THEIRS = ("lightning", "pytorch_lightning", "lightning_fabric", "submitit")
LOOP_KEYS = ("fit_loop", "epoch_loop", "val_loop")  # Lightning's loop state in a checkpoint
NAMEDTUPLE = {"_replace", "_asdict", "_fields", "_make"}  # public, though they start with _


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _theirs(module: str) -> bool:
    return module.split(".")[0] in THEIRS


def _imported(node: ast.AST) -> list[str]:
    """The parts of the names an import of Lightning (or submitit) names, else none."""
    if isinstance(node, ast.ImportFrom) and node.module and _theirs(node.module):
        return node.module.split(".") + [a.name for a in node.names]
    if isinstance(node, ast.Import):
        return [p for a in node.names if _theirs(a.name) for p in a.name.split(".")]
    return []


def _private_attribute(node: ast.AST) -> str | None:
    """``x._name`` of anything but ``self`` or ``cls``, or ``getattr(x, "_name")``."""
    if isinstance(node, ast.Attribute) and _private(node.attr) and node.attr not in NAMEDTUPLE:
        if not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
            return f".{node.attr}"
    if isinstance(node, ast.Call) and getattr(node.func, "id", None) in ("getattr", "setattr",
                                                                           "hasattr"):  # fmt: skip
        name = node.args[1] if len(node.args) > 1 else None
        if isinstance(name, ast.Constant) and isinstance(name.value, str) and _private(name.value):
            return f"{node.func.id}(..., {name.value!r})"
    return None


def _own_privates(node: ast.AST) -> dict[str, int]:
    """The ``self._name`` a class (or function) uses and the ``_name`` methods it defines."""
    names: dict[str, int] = {}
    for n in ast.walk(node):
        if isinstance(n, ast.Attribute) and getattr(n.value, "id", None) == "self":
            if _private(n.attr):
                names.setdefault(n.attr, n.lineno)
        elif isinstance(n, ast.FunctionDef) and _private(n.name):
            names.setdefault(n.name, n.lineno)
    return names


def _their_privates(cls: type) -> set[str]:
    """The private names of a Lightning class: in its namespace, or set on ``self`` in its code."""
    import inspect
    import textwrap

    names = {n for n in vars(cls) if _private(n)}
    try:
        return names | set(_own_privates(ast.parse(textwrap.dedent(inspect.getsource(cls)))))
    except (OSError, TypeError):
        return names


def _inherited(tree: ast.Module, namespace: dict) -> list[str]:
    """In each class with a Lightning base (``namespace``: the module's, imported), the private
    names of a Lightning base it uses or overrides."""
    found = []
    for node in (n for n in tree.body if isinstance(n, ast.ClassDef)):
        cls = namespace.get(node.name)
        bases = [b for b in getattr(cls, "__mro__", ())[1:] if _theirs(b.__module__)]
        theirs = set().union(*map(_their_privates, bases))
        found += [f"line {line}: {node.name}.{name} is Lightning's"
                  for name, line in _own_privates(node).items() if name in theirs]  # fmt: skip
    return found


def lightning_private_uses(source: str, namespace: dict, training: bool = False) -> list[str]:
    """Where a module (``source``; ``namespace``: its names, imported) reaches into Lightning's
    or submitit's non-public API: an import of a ``_`` name or module of theirs, a key of
    Lightning's loop state (``"fit_loop"``), and in a module that imports them (or any of
    ``training/``), a ``x._name`` of anything but ``self``/``cls`` and, in a class on a Lightning
    base, a private name of that base (used on ``self`` or overridden)."""
    tree = ast.parse(source)
    found = []
    for node in ast.walk(tree):
        found += [f"line {node.lineno}: imports {n}" for n in _imported(node) if _private(n)]
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            found += [f"line {node.lineno}: {node.value!r}" for k in LOOP_KEYS if k in node.value]
    if training or any(_imported(n) for n in ast.walk(tree)):
        found += [f"line {n.lineno}: {a}" for n in ast.walk(tree) if (a := _private_attribute(n))]
        found += _inherited(tree, namespace)
    return found
