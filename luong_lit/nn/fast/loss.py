"""Summed token NLL of ``softmax(W_s h_tilde_t)`` (paper Eq. 6), fused and chunked.

The fast form of :func:`luong_lit.nn.loss.output_nll`. The softmax layer dominates the cost of
a small NMT model. Computing it chunk by chunk,
and the gradient of the (scalar) loss in the same pass, keeps each ``(chunk, V)`` block of
logits in cache and never materialises the full ``(N, V)`` log-probabilities, their
gradient, or the one-hot scatter. The result equals
``F.cross_entropy(h @ W.T + b, y, reduction="sum", label_smoothing=eps)`` and its
gradients (``tests/test_nn_loss.py``).

With ``eps > 0`` (label smoothing, Szegedy et al. 2016; not in the paper) the target is
``(1 - eps)`` on the reference word plus ``eps / V`` on every word, so the loss of a row is
``(1 - eps) · (-log p_y) + eps · mean_v(-log p_v)``.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from luong_lit.nn.fast.projection import cpu_linear
from luong_lit.nn.loss import check_label_smoothing


class _LinearCrossEntropy(torch.autograd.Function):
    @staticmethod
    def forward(
        ctx: Any,
        h: Tensor,
        weight: Tensor,
        bias: Tensor | None,
        target: Tensor,
        chunk: int,
        eps: float,
        ignore: int,
    ) -> Tensor:
        need_grad = any(ctx.needs_input_grad[:3])
        acc = torch.float32 if h.dtype in (torch.float16, torch.bfloat16) else h.dtype
        W_s = weight.to(h.dtype)  # (V, d) under autocast h_tilde is bf16/fp16 and W_s fp32
        b_s = None if bias is None else bias.to(h.dtype)  # (V,)
        loss = h.new_zeros((), dtype=acc)
        grad_h = torch.empty_like(h) if need_grad else None
        grad_w = torch.zeros_like(weight) if need_grad else None
        grad_b = torch.zeros_like(bias) if (need_grad and bias is not None) else None
        for s in range(0, h.size(0), chunk):
            h_c, y_c = h[s : s + chunk], target[s : s + chunk]  # (n, d), (n,)
            keep = None  # (n, 1) False at ignored rows; ids are never negative
            if ignore >= 0:
                keep = (y_c != ignore).unsqueeze(1)
                y_c = y_c.masked_fill(~keep.squeeze(1), 0)  # (n,) any valid id there
            logits = cpu_linear(h_c, W_s, b_s)  # (n, V), oneDNN or column blocks on CPU
            if logits.dtype in (torch.float16, torch.bfloat16):
                logits = logits.float()  # the softmax runs in fp32 under mixed precision
            picked = logits.gather(1, y_c.unsqueeze(1))  # (n, 1) logit of the reference word
            if eps:  # (1 - eps) logit[y] + eps mean_v logit[v]
                picked = picked.mul(1.0 - eps).add_(logits.mean(1, keepdim=True), alpha=eps)
            top = logits.amax(1, keepdim=True)  # (n, 1)
            probs = logits.sub_(top).exp_()  # (n, V) unnormalised, in place: one pass over V
            z = probs.sum(1, keepdim=True)  # (n, 1)
            row_loss = top + z.log() - picked  # (n, 1) log Σ exp(logits) - target · logits
            loss += (row_loss if keep is None else row_loss * keep).sum()
            if grad_h is None or grad_w is None:  # no gradient asked for
                continue
            probs.div_(z)  # softmax
            if eps:
                probs.sub_(eps / probs.size(1))
            probs[torch.arange(y_c.numel(), device=h.device), y_c] -= 1.0 - eps  # d loss / d logits
            if keep is not None:
                probs.mul_(keep)  # ignored rows have no gradient
            if grad_b is not None:
                grad_b += probs.sum(0)  # (V,)
            probs = probs.to(h.dtype)
            grad_h[s : s + chunk] = probs @ W_s  # (n, d)
            if grad_w.dtype == h.dtype:
                grad_w.addmm_(probs.t(), h_c)  # (V, d)
            else:  # mixed precision: low-precision product, accumulated in W_s's own dtype
                grad_w += probs.t() @ h_c  # (V, d)
        ctx.save_for_backward(grad_h, grad_w, grad_b)
        return loss

    @staticmethod
    def backward(ctx: Any, grad_out: Tensor) -> tuple[Tensor | None, ...]:
        grad_h, grad_w, grad_b = ctx.saved_tensors

        def scale(g: Tensor | None) -> Tensor | None:
            return None if g is None else g * grad_out.to(g.dtype)

        return scale(grad_h), scale(grad_w), scale(grad_b), None, None, None, None


def linear_cross_entropy(
    h: Tensor,
    weight: Tensor,
    bias: Tensor | None,
    target: Tensor,
    chunk: int = 512,
    label_smoothing: float = 0.0,
    ignore_index: int = -100,
) -> Tensor:
    """``Σ_i -log softmax(W h_i + b)[y_i]`` for rows ``h`` (N, d) and targets ``y`` (N,).

    ``label_smoothing`` ``eps`` in [0, 1) smooths the target distribution (see the module
    docstring); 0 is the plain NLL of the paper. Rows whose target is ``ignore_index`` add
    nothing to the loss or its gradient (as in ``F.cross_entropy``), so a padded batch needs
    no host-side selection of its real rows.
    """
    check_label_smoothing(label_smoothing)
    loss: Tensor = _LinearCrossEntropy.apply(  # type: ignore[no-untyped-call]
        h, weight, bias, target, chunk, float(label_smoothing), ignore_index
    )
    return loss
