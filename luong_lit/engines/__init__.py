"""How the paper's model is computed: one key, ``engine``, for training and decoding alike.

* ``reference`` (:class:`ReferenceEngine`): the plain modules of :mod:`luong_lit.nn`, to be
  read beside the paper.
* ``fast`` (:class:`FastEngine`, the default): the same parameters through
  :mod:`luong_lit.nn.fast`. On one GPU in bf16-mixed its training steps run in fixed shapes,
  captured in CUDA graphs (``graphs``); for decoding it precomputes each step's constants,
  optionally with 8-bit products (``int8``).

Both give the same model: a checkpoint trained with one decodes with the other.
"""

from __future__ import annotations

from typing import Any

from luong_lit.engines.fast import GRAPH_MODES, INT8_PARTS, FastEngine
from luong_lit.engines.reference import ReferenceEngine
from luong_lit.errors import ConfigError

ENGINES: dict[str, type[ReferenceEngine]] = {"reference": ReferenceEngine, "fast": FastEngine}

__all__ = ["ENGINES", "GRAPH_MODES", "INT8_PARTS", "FastEngine", "ReferenceEngine", "make_engine"]


def make_engine(engine: str | ReferenceEngine = "fast", **options: Any) -> ReferenceEngine:
    """An engine from its name (``reference``, ``fast``) and options, or an engine as it is."""
    if not isinstance(engine, str):
        return engine
    if engine not in ENGINES:
        raise ConfigError(f"engine {engine!r} is unknown; choose one of {', '.join(ENGINES)}")
    try:
        return ENGINES[engine](**options)
    except TypeError as err:
        raise ConfigError(f"engine {engine}: {err}") from None
