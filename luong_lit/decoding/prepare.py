"""The model that decoding steps: a trained network as it is, or wrapped for speed.

:func:`for_decoding` is called by the decoding entry points (:func:`~.corpus.decode_corpus`)
for one decoding run: a model in eval mode with ``impl="fast"`` (and any model asked to decode
with ``int8``) is wrapped in :class:`~luong_lit.nn.fast.decoding.FastStepper`; an ensemble
has each member wrapped. Anything else is returned unchanged.
"""

from __future__ import annotations

from luong_lit.decoding.ensemble import Ensemble
from luong_lit.errors import UsageError


def for_decoding(model, int8: str | None = None):
    """``model`` ready to decode: the model itself, or a wrapper of it (or of its members)."""
    members = getattr(model, "members", None)
    if members is not None:
        return Ensemble([for_decoding(m, int8) for m in members], model.combine)
    if model.training or not hasattr(model, "decoder"):  # dropout on, or already a wrapper
        if int8:
            raise UsageError("int8 decoding needs a model in eval mode")
        return model
    if model.impl != "fast" and not int8:
        return model
    from luong_lit.nn.fast.decoding import FastStepper
    from luong_lit.nn.fast.quantize import QuantizationUnavailable

    try:
        return FastStepper(model, int8)
    except QuantizationUnavailable as err:
        raise UsageError(f"--int8: {err}") from None
