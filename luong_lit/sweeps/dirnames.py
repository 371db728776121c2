"""The directory names of a sweep's jobs: what the sweep varies (:func:`note_swept` tells the
jobs which keys those are, :func:`dirname` is the ``luong_lit.dirname`` resolver of
``conf/hydra/``), so that runs with constant overrides can be told apart; and the command that
runs the sweep again (:func:`sweep_command`), which a stopped job prints.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence

SWEPT_ENV = "LUONG_LIT_SWEPT"  # the keys a sweep varies, for its jobs' directory names
SWEEP_ARGV_ENV = "LUONG_LIT_SWEEP_ARGV"  # the sweep's command line, for its resume command


def note_swept(argv: Sequence[str]) -> None:
    """Tell this sweep's jobs (in this process or started from it) which of the command line's
    overrides the sweep varies (``attention=local_p,global``, ``glob(...)``, ``range(...)``),
    for :func:`dirname`."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    args = [a for a in argv if "=" in a and not a.startswith("-")]
    try:
        parsed = OverridesParser.create().parse_overrides(args)
    except Exception:  # noqa: BLE001 - Hydra reports a malformed override itself
        return
    os.environ[SWEPT_ENV] = ",".join(o.key_or_group for o in parsed if o.is_sweep_override())
    kept = [a for a in argv if a not in ("-m", "--multirun") and not _names_sweep_dir(a)]
    os.environ[SWEEP_ARGV_ENV] = json.dumps(kept)


def _names_sweep_dir(arg: str) -> bool:
    return arg.split("=", 1)[0].lstrip("+") == "hydra.sweep.dir"


def sweep_command(sweep_dir: str | os.PathLike) -> str:
    """The command that runs this process's sweep again into ``sweep_dir``: its finished jobs
    are skipped, an interrupted one resumes (:class:`luong_lit.training.run_folder.RunFolder`)."""
    import shlex

    argv = json.loads(os.environ.get(SWEEP_ARGV_ENV, "[]"))
    where = shlex.quote(f'hydra.sweep.dir="{sweep_dir}"')
    return " ".join(["python -m luong_lit.train -m", *map(shlex.quote, argv), where])


def _items(overrides: str) -> list[str]:
    """``k=v`` items of Hydra's ``override_dirname`` (a value may hold commas: ``k=[1,2]``)."""
    return [x for x in re.split(r",(?=[+~]*[\w.@/-]+=)", str(overrides)) if x]


def dirname(overrides: str, limit: int = 120) -> str:
    """A job's directory name from its overrides: the keys the sweep varies only, in the command
    line's order (the constant overrides are the sweep's, in its ``multirun.yaml``); all of them
    when it varies none (a sweep of one job, or of jobs added one at a time). One path
    component (``/`` becomes ``_``); a name over ``limit`` characters keeps its whole leading
    items and ends with a digest of the rest, so that no value is cut in the middle and every job
    keeps a name of its own."""
    import hashlib

    swept = [k for k in os.environ.get(SWEPT_ENV, "").split(",") if k]
    items = _items(overrides)
    chosen = [x for x in items if x.split("=", 1)[0].lstrip("+~") in swept]
    chosen.sort(key=lambda x: swept.index(x.split("=", 1)[0].lstrip("+~")))
    name = ",".join(chosen or items).replace(os.sep, "_")
    if len(name) <= limit:
        return name
    digest = "~" + hashlib.sha1(name.encode()).hexdigest()[:8]
    kept = ""
    for item in chosen or items:
        item = item.replace(os.sep, "_")
        if len(kept) + len(item) + 1 + len(digest) > limit:
            break
        kept = f"{kept},{item}" if kept else item
    return (kept or name[: limit - len(digest)]) + digest
