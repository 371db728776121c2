"""Inverted dropout whose masks are drawn as uniform floats (plain PyTorch).

On CPU, drawing uniform floats and comparing them with ``p`` is cheaper than ``bernoulli_``,
and so is the backward pass of the product with the mask below (docs/results_log.md).
The distribution is the same: an element is kept when ``u >= p`` for ``u ~ U[0, 1)``,
and kept elements are scaled by ``1 / (1 - p)``. On other devices ``F.dropout`` is used.
"""

from __future__ import annotations

import torch
from torch import Tensor
from torch.nn import functional as F


def dropout(x: Tensor, p: float, training: bool = True) -> Tensor:
    """``x`` with each element zeroed with probability ``p`` and the rest scaled up."""
    if not training or p == 0.0:
        return x
    if x.device.type != "cpu" or p >= 1.0:
        return F.dropout(x, p, training)
    keep = torch.rand_like(x).ge_(p).mul_(1.0 / (1.0 - p))  # 0 or 1/(1-p)
    return x * keep
