"""The training objective (paper §3, Eq. 6): summed token NLL of the references.

:func:`output_nll` is the plain form (``F.cross_entropy``); ``luong_lit.nn.fast.loss`` computes
the same sum chunk by chunk with its gradient in one pass. With ``label_smoothing`` ``eps > 0``
(Szegedy et al. 2016; not in the paper) the target is ``1 - eps`` on the reference word plus
``eps / V`` on every word.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor
from torch.nn import functional as F

from luong_lit.validate import rate


def check_label_smoothing(eps: float) -> None:
    rate("label_smoothing", eps)


def output_nll(
    h_tilde: Tensor,
    targets: Tensor,
    *,
    weight: Tensor,
    bias: Tensor | None,
    label_smoothing: float = 0.0,
    ignore_index: int = -100,
) -> Tensor:
    """``Σ_i -log softmax(W_s h_tilde_i + b_s)[y_i]`` for rows (N, d) and targets (N,),
    leaving out rows whose target is ``ignore_index``."""
    check_label_smoothing(label_smoothing)
    logits = F.linear(h_tilde, weight, bias)  # (N, V)
    if logits.dtype in (torch.float16, torch.bfloat16):
        logits = logits.float()  # the softmax runs in fp32 under mixed precision
    return F.cross_entropy(
        logits,
        targets,
        reduction="sum",
        label_smoothing=label_smoothing,
        ignore_index=ignore_index,
    )


def token_nll(net: Any, batch: Any, label_smoothing: float = 0.0) -> tuple[Tensor, int]:
    """Summed token NLL of a batch's references under teacher forcing, and the token count.

    ``batch`` has ``src``, ``src_len``, ``tgt_in`` (``<s> y_1 ..``) and ``tgt_out``
    (``y_1 .. </s>``); padded positions are left out, so padding costs no softmax work.
    ``label_smoothing`` gives the smoothed training loss instead (0: the NLL, which
    perplexity uses).
    """
    h_tilde, _ = net(batch.src, batch.src_len, batch.tgt_in)  # (B, T, d)
    mask = batch.tgt_out != net.pad_id  # (B, T)
    nll = net.output_nll(h_tilde[mask], batch.tgt_out[mask], label_smoothing)  # Eq. 6
    return nll, int(mask.sum())
