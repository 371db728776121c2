"""Parts of a user's own (attentions, scores, corpora), loaded for every command as fairseq
loads its ``--user-dir`` and as Python packages declare plugins:

* an installed package that declares an entry point in the group ``luong_lit.plugins``
  (``[project.entry-points."luong_lit.plugins"] my_parts = "my_parts"`` in its
  ``pyproject.toml``) is imported by every command, the API and the server, and its module
  registers its parts (:func:`load_entry_points`; an entry point naming a function is called);
* ``--user-dir DIR`` before or after any command (or ``LUONG_LIT_USER_DIR``, several
  separated by ``:``) imports the package or ``.py`` file ``DIR`` (:func:`load_user_dir`).

What registered each part is remembered (:func:`origin`), and a checkpoint keeps it for each
part its model names that the kit does not have (``parts``, :func:`parts_of`): loaded where
that part is not registered, it says which module registered it and how to load it; it never
imports code a checkpoint names.
"""

from __future__ import annotations

import importlib
import os
import sys
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

from luong_lit.errors import UsageError

GROUP = "luong_lit.plugins"  #: the entry-point group of installed plugins
USER_DIR_ENV = "LUONG_LIT_USER_DIR"  #: folders of a user's parts, ``:``-separated
_origins: dict[str, str] = {}  # top-level module -> how it was loaded, in words
_done: set[str] = set()  # entry points and folders loaded already


def load_entry_points() -> None:
    """Import every installed package's ``luong_lit.plugins`` entry point (once each)."""
    for ep in entry_points(group=GROUP):
        if f"ep:{ep.name}" in _done:
            continue
        _done.add(f"ep:{ep.name}")
        package = ep.dist.name if ep.dist is not None else "?"
        try:
            loaded = ep.load()
        except Exception as err:  # noqa: BLE001 - a user's plugin: named, in one line
            raise UsageError(f"the plugin {ep.name} ({ep.value}, package {package}) failed to "
                             f"load: {type(err).__name__}: {err}") from None  # fmt: skip
        if callable(loaded) and not isinstance(loaded, type):
            loaded()
        _origins[ep.module.split(".")[0]] = (
            f"the installed package {package} (entry point {ep.name})"
        )


def load_user_dir(folder: str | os.PathLike[str]) -> None:
    """Import ``folder`` (a package, or a ``.py`` file) as fairseq's ``--user-dir`` does: its
    parent on ``sys.path``, its name as the module's."""
    path = Path(folder).expanduser().resolve()
    if str(path) in _done:
        return
    if not path.exists():
        raise UsageError(f"--user-dir {folder}: no such folder or file")
    name = path.stem if path.suffix == ".py" else path.name
    if path.is_dir() and not (path / "__init__.py").is_file():
        raise UsageError(f"--user-dir {folder}: a package folder (with __init__.py) or a .py file")
    sys.path.insert(0, str(path.parent))
    importlib.import_module(name)
    _done.add(str(path))
    _origins[name] = f"--user-dir {path}"
    known = [p for p in os.environ.get(USER_DIR_ENV, "").split(os.pathsep) if p]
    if str(path) not in known:  # a sweep's jobs and a run's ranks load it too
        os.environ[USER_DIR_ENV] = os.pathsep.join([*known, str(path)])


def load_plugins(user_dirs: list[str] | tuple[str, ...] = ()) -> None:
    """Every installed plugin, then the folders of ``LUONG_LIT_USER_DIR`` and ``user_dirs``."""
    load_entry_points()
    env = [p for p in os.environ.get(USER_DIR_ENV, "").split(os.pathsep) if p]
    for folder in (*env, *user_dirs):
        load_user_dir(folder)


def take_user_dirs(argv: list[str]) -> tuple[list[str], list[str]]:
    """``argv`` without its ``--user-dir DIR`` (or ``--user-dir=DIR``) options, and those
    folders: every command takes them, wherever they stand."""
    rest, dirs, it = [], [], iter(argv)
    for arg in it:
        if arg == "--user-dir":
            folder = next(it, None)
            if folder is None:
                raise UsageError("--user-dir needs a folder (or a .py file) of your parts")
            dirs.append(folder)
        elif arg.startswith("--user-dir="):
            dirs.append(arg.split("=", 1)[1])
        else:
            rest.append(arg)
    return rest, dirs


def origin(entry: Any) -> str | None:
    """How the code of a registered ``entry`` was loaded, in words; None for the kit's own."""
    module = getattr(entry, "__module__", None) or ""
    if module.startswith("luong_lit.") or module == "luong_lit":
        return None
    top = module.split(".")[0]
    return f"module {module}, from {_origins[top]}" if top in _origins else f"module {module}"


def parts_of(net: dict[str, Any], dataset: str | None = None) -> dict[str, str] | None:
    """For each part a model's config names that the kit does not have: what registered it
    (``{"attention local_p_sigma": "module my_parts, from --user-dir /x/my_parts"}``)."""
    from luong_lit.data.sources import CORPORA
    from luong_lit.nn.names import ATTENTIONS, SCORES

    named = [(kind, table, _name(net.get(kind))) for kind, table in
             (("attention", ATTENTIONS), ("score", SCORES))]  # fmt: skip
    named.append(("corpus", CORPORA, dataset))
    found = {f"{kind} {name}": origin(table[name]) for kind, table, name in named
             if name and name in table}  # fmt: skip
    kept = {k: v for k, v in found.items() if v is not None}
    return kept or None


def _name(node: Any) -> str | None:
    return node.get("name") if isinstance(node, dict) else node if isinstance(node, str) else None


def how_to_load(parts: dict[str, str] | None, kind: str, name: str) -> str:
    """What a checkpoint says of a part that is not registered here: what registered it when the
    model was trained, and how to load it (no code is ever imported from a checkpoint)."""
    said = (parts or {}).get(f"{kind} {name}")
    if said is None:
        return (f"register it before loading: install the package that declares it (entry point "
                f"{GROUP}), or give --user-dir DIR, the module that registers it")  # fmt: skip
    module, _, source = said.partition(", from ")
    if source.startswith("--user-dir "):
        how = f"give {source}"
    elif source.startswith("the installed package "):
        how = f"install {source.split(' (')[0][len('the installed ') :]}"
    elif module == "module __main__":
        how = "put its code in a module and give --user-dir with it (or import it first)"
    else:
        how = f"give --user-dir with the folder of that module (or import {module[7:]} first)"
    return f"the model was trained with it registered by {said}: {how}"
