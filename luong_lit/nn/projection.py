"""The output projection ``W_s h_tilde_t + b`` (paper Eq. 6) for decoding, laid out for speed.

For the shapes of decoding (a few hundred rows ``h_tilde_t`` of a small ``d`` against a
vocabulary of thousands of words), the BLAS matrix product that writes ``(V, n)`` runs
about 1.4× faster on CPU than the one that writes ``(n, V)``; it is the same sum, term by
term. :func:`project_rows` computes ``(V, n)`` and transposes it back block by block, which
costs less than the product saves. Under autograd, or off the CPU, it is ``F.linear``.
"""
from __future__ import annotations

import torch
from torch import Tensor
from torch.nn import functional as F

ROWS, BLOCK = 320, 512  # rows per product; vocabulary rows per cache-sized transpose block


def project_rows(h: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
    """``F.linear(h, weight, bias)`` for ``h`` (n, d) and ``weight`` (V, d): logits (n, V)."""
    grad = torch.is_grad_enabled() and (h.requires_grad or weight.requires_grad)
    if grad or h.device.type != "cpu" or h.dim() != 2:
        return F.linear(h, weight, bias)
    out = h.new_empty(h.size(0), weight.size(0))  # (n, V)
    for r in range(0, h.size(0), ROWS):
        h_r = h[r:r + ROWS]  # (n_r, d)
        if bias is None:
            logits_T = weight @ h_r.t()  # (V, n_r)
        else:
            logits_T = torch.addmm(bias.unsqueeze(1), weight, h_r.t())  # (V, n_r)
        for v in range(0, weight.size(0), BLOCK):
            out[r:r + ROWS, v:v + BLOCK].copy_(logits_T[v:v + BLOCK].t())
    return out
