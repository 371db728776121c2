"""Where the kit's folders are: ``conf/`` (the Hydra configs) and ``notebooks/`` (the analysis
notebook), shipped with it, and the cache it writes (``LUONG_LIT_CACHE``); and the version the
installed kit declares (:func:`version`).

In the repository both stand at the top level, beside ``luong_lit/``. A wheel carries them inside
the package, as ``luong_lit/conf`` and ``luong_lit/notebooks`` (``pyproject.toml`` maps them
in), so an installed kit needs no checkout; an editable install, or a checkout on
``PYTHONPATH``, reads them where they stand.
"""

from __future__ import annotations

import os
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent


def shipped(name: str) -> Path:
    """The folder ``name`` inside an installed wheel, else the checkout's top-level one."""
    inside = PACKAGE / name
    return inside if inside.is_dir() else PACKAGE.parent / name


CONF_DIR = shipped("conf")  # the Hydra configs
NOTEBOOKS_DIR = shipped("notebooks")  # analysis.ipynb


def cache_dir() -> Path:
    """Downloads, prepared stores, checksums and learned recasers: ``LUONG_LIT_CACHE``, else
    ``~/.cache/luong_lit``."""
    return Path(os.environ.get("LUONG_LIT_CACHE", Path.home() / ".cache" / "luong_lit"))


def version() -> str:
    """The version the installed kit declares (``pyproject.toml``'s, through its metadata);
    ``0+unknown`` for a checkout that is not installed."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return installed("luong_lit")
    except PackageNotFoundError:
        return "0+unknown"
