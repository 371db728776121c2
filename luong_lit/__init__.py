"""luong_lit: Luong, Pham & Manning (2015) with PyTorch Lightning and Hydra.

From Python, ``luong_lit.load(checkpoint_or_list, **options)`` gives a translator
(:class:`luong_lit.translator.Translator`). Its options: the
:class:`~luong_lit.translator.LoadOptions`, fixed when the model is loaded, and the calls'
default :class:`~luong_lit.translator.SearchOptions`. It is imported on first use, so that
``import luong_lit.nn`` stays light. ``luong_lit.__version__``: the installed version.
"""

from __future__ import annotations

_API = {
    "load": "luong_lit.translator",
    "Translator": "luong_lit.translator",
    "LoadOptions": "luong_lit.translator",
    "SearchOptions": "luong_lit.translator",
}
__all__ = list(_API)


def __getattr__(name: str):
    if name == "__version__":  # read on first use, as the API is
        from luong_lit.resources import version

        return version()
    if name in _API:
        import importlib

        return getattr(importlib.import_module(_API[name]), name)
    raise AttributeError(f"module 'luong_lit' has no attribute {name!r}")
