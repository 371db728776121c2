"""The directory names of a sweep's jobs: what the sweep varies first (:func:`note_swept` tells
the jobs which keys those are, :func:`dirname` is the ``luong_lit.dirname`` resolver of
``conf/hydra/``), so that runs with constant overrides can be told apart.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence

SWEPT_ENV = "LUONG_LIT_SWEPT"  # the keys a sweep varies, for its jobs' directory names


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


def _items(overrides: str) -> list[str]:
    """``k=v`` items of Hydra's ``override_dirname`` (a value may hold commas: ``k=[1,2]``)."""
    return [x for x in re.split(r",(?=[+~]*[\w.@/-]+=)", str(overrides)) if x]


def dirname(overrides: str, limit: int = 120) -> str:
    """A job's directory name from its overrides: what the sweep varies first (in the command
    line's order), then the others, then the ``+``/``++`` ones; one path component (``/``
    becomes ``_``), cut to ``limit`` characters with a digest of the whole, so that long values
    still fit and every job keeps a name of its own."""
    import hashlib

    swept = [k for k in os.environ.get(SWEPT_ENV, "").split(",") if k]
    items = _items(overrides)

    def rank(item: str) -> tuple[int, int]:
        key = item.split("=", 1)[0]
        if key.lstrip("+~") in swept:
            return 0, swept.index(key.lstrip("+~"))
        return (2 if key.startswith("+") else 1), 0

    name = ",".join(sorted(items, key=rank)).replace(os.sep, "_")
    if len(name) <= limit:
        return name
    return name[: limit - 9] + "~" + hashlib.sha1(name.encode()).hexdigest()[:8]
