"""The output projection ``W_s h_tilde_t + b`` (paper Eq. 6) on CPU, laid out for speed.

For the shapes of this model (a few hundred rows ``h_tilde_t`` of a small ``d`` against a
vocabulary of thousands of words), BLAS runs the product faster on CPU when it is written a
block of output columns at a time than as one ``(n, V)`` product
(``benchmarks/projection_layouts.py``). :func:`linear_columns` does that; it serves decoding
(:func:`project_rows`) and the fused training loss (:mod:`luong_lit.nn.loss`).
"""
from __future__ import annotations

import torch
from torch import Tensor
from torch.nn import functional as F

COLS = 512  # output columns (vocabulary rows of W_s) per product
MIN_ROWS = 32  # below this many rows one product is as fast


def linear_columns(h: Tensor, weight: Tensor, bias: Tensor | None, cols: int = COLS) -> Tensor:
    """``F.linear(h, weight, bias)``, (n, d) -> (n, V), written ``cols`` output columns at a time.

    Each product reads a ``(cols, d)`` slice of ``weight`` and writes straight into its
    columns of the result (no copy): the same dot products, so the same values. Off the CPU
    it is ``F.linear``. The blocks write into the result in place, so this is for inference
    and for the fused loss, which forms its own gradients.
    """
    if h.device.type != "cpu":
        return F.linear(h, weight, bias)
    out = h.new_empty(h.size(0), weight.size(0))  # (n, V)
    for v in range(0, weight.size(0), cols):
        if bias is None:
            torch.mm(h, weight[v:v + cols].t(), out=out[:, v:v + cols])  # (n, cols)
        else:
            torch.addmm(bias[v:v + cols], h, weight[v:v + cols].t(), out=out[:, v:v + cols])
    return out


def project_rows(h: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
    """``F.linear(h, weight, bias)`` for ``h`` (n, d) and ``weight`` (V, d): logits (n, V).

    Without autograd, on CPU, with at least ``MIN_ROWS`` rows: :func:`linear_columns`.
    Otherwise ``F.linear``, so gradients flow.
    """
    grad = torch.is_grad_enabled() and (h.requires_grad or weight.requires_grad)
    if grad or h.dim() != 2 or h.size(0) < MIN_ROWS:
        return F.linear(h, weight, bias)
    return linear_columns(h, weight, bias)
