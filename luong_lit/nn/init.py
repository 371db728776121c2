"""One initialisation point for every parameter (paper §4.1)."""
from __future__ import annotations

from torch import nn


def init_uniform_(module: nn.Module, scale: float = 0.1) -> nn.Module:
    """Draw every parameter, embeddings included, from U(-scale, scale).

    Paper §4.1: "parameters are uniformly initialized in [-0.1, 0.1]"
    (nmt.matlab ``code/basic/initMatrixRange.m``).
    """
    for p in module.parameters():
        nn.init.uniform_(p, -scale, scale)
    return module
