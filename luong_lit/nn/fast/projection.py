"""The output projection ``W_s h_tilde_t + b`` (paper Eq. 6) on CPU, laid out for speed.

For the shapes of this model (a few hundred rows ``h_tilde_t`` of a small ``d`` against a
vocabulary of thousands of words) the BLAS product ``F.linear`` runs well below the CPU's
speed. Two faster ways were measured side by side (docs/results_log.md):

* oneDNN's fp32 inner-product kernel, which torch ships for its own fused CPU graphs
  (``torch.ops.mkldnn._linear_pointwise``). It is a private operator, so it is used only
  after a probe on first use finds it present and equal to ``F.linear``, and never when
  the environment variable ``LUONG_LIT_ONEDNN`` is ``0``;
* the BLAS product written a block of output columns at a time (:func:`linear_columns`).

:func:`cpu_linear` picks the first that applies. It serves decoding (:func:`project_rows`)
and the fused training loss (:mod:`luong_lit.nn.loss`), neither of which needs autograd
through it.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable

import torch
from torch import Tensor
from torch.nn import functional as F

COLS = 512  # output columns (vocabulary rows of W_s) per product
MIN_ROWS = 32  # below this many rows one BLAS product is as fast as column blocks


@functools.cache
def onednn_linear() -> Callable[..., Tensor] | None:
    """oneDNN's ``linear(x, weight, bias)`` for fp32 CPU tensors, or None where it cannot be used.

    None when ``LUONG_LIT_ONEDNN=0``, when this torch build lacks the operator, or when a
    probe product disagrees with ``F.linear``. Cached: decided once per process.
    """
    if os.environ.get("LUONG_LIT_ONEDNN", "1") == "0" or not torch.backends.mkldnn.is_available():  # type: ignore[no-untyped-call]
        return None
    op = getattr(getattr(torch.ops, "mkldnn", None), "_linear_pointwise", None)
    if op is None:
        return None
    g = torch.Generator().manual_seed(0)
    x, w, b = (torch.randn(*s, generator=g) for s in ((5, 16), (24, 16), (24,)))
    try:
        ok = torch.allclose(
            op(x, w, b, "none", [], ""), F.linear(x, w, b), atol=1e-5
        ) and torch.allclose(op(x, w, None, "none", [], ""), F.linear(x, w), atol=1e-5)
    except (RuntimeError, TypeError, NotImplementedError):
        return None
    return (lambda x, w, b: op(x, w, b, "none", [], "")) if ok else None


def linear_columns(h: Tensor, weight: Tensor, bias: Tensor | None, cols: int = COLS) -> Tensor:
    """``F.linear(h, weight, bias)``, (n, d) -> (n, V), written ``cols`` output columns at a time.

    Each product reads a ``(cols, d)`` slice of ``weight`` and writes straight into its
    columns of the result: the same dot products, so the same values. Off the CPU it is
    ``F.linear``. The blocks write into the result in place, so this is for inference and
    for the fused loss, which forms its own gradients.
    """
    if h.device.type != "cpu":
        return F.linear(h, weight, bias)
    out = h.new_empty(h.size(0), weight.size(0))  # (n, V)
    for v in range(0, weight.size(0), cols):
        if bias is None:
            torch.mm(h, weight[v : v + cols].t(), out=out[:, v : v + cols])  # (n, cols)
        else:
            torch.addmm(bias[v : v + cols], h, weight[v : v + cols].t(), out=out[:, v : v + cols])
    return out


def cpu_linear(h: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
    """``F.linear(h, weight, bias)`` for ``h`` (n, d), ``weight`` (V, d), without autograd.

    fp32 on CPU: oneDNN's kernel where :func:`onednn_linear` allows it. Otherwise
    :func:`linear_columns` (``F.linear`` off the CPU), or one ``F.linear`` below
    ``MIN_ROWS`` rows.
    """
    fast = (
        onednn_linear()
        if h.device.type == "cpu" and h.dtype == weight.dtype == torch.float32
        else None
    )
    if (
        fast is not None
        and weight.is_contiguous()
        and (bias is None or bias.dtype == torch.float32)
    ):
        return fast(h.contiguous(), weight, bias)  # (n, V)
    if h.size(0) < MIN_ROWS:
        return F.linear(h, weight, bias)
    return linear_columns(h, weight, bias)


def project_rows(h: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
    """Decoding logits ``F.linear(h, weight, bias)`` for ``h`` (n, d), ``weight`` (V, d): (n, V).

    Without autograd: :func:`cpu_linear`. Under autograd, or for other shapes: ``F.linear``,
    so gradients flow.
    """
    grad = torch.is_grad_enabled() and (h.requires_grad or weight.requires_grad)
    if grad or h.dim() != 2:
        return F.linear(h, weight, bias)
    return cpu_linear(h, weight, bias)
