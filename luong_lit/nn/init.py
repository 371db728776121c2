"""One initialisation point for every parameter (paper §4.1), with a Glorot alternative."""

from __future__ import annotations

import torch
from torch import nn

INITS = ("uniform", "xavier")


def init_uniform_(module: nn.Module, scale: float = 0.1) -> nn.Module:
    """Draw every parameter, embeddings included, from U(-scale, scale).

    Paper §4.1: "parameters are uniformly initialized in [-0.1, 0.1]"
    (nmt.matlab ``code/basic/initMatrixRange.m``).
    """
    for p in module.parameters():
        nn.init.uniform_(p, -scale, scale)
    return module


@torch.no_grad()
def init_xavier_(module: nn.Module) -> nn.Module:
    """Glorot-uniform matrices and embeddings, zero biases (Joey NMT's default).

    An LSTM stacks its four gate matrices in one tensor; each gate block gets its own
    Glorot range, as if it were a separate layer.
    """
    for name, p in module.named_parameters():
        if p.dim() < 2:
            nn.init.zeros_(p)
        elif ".rnn." in f".{name}":
            for block in p.chunk(4, 0):  # i, f, g, o
                nn.init.xavier_uniform_(block)
        else:
            nn.init.xavier_uniform_(p)
    return module


def initialise_(module: nn.Module, scheme: str = "uniform", scale: float = 0.1) -> nn.Module:
    if scheme == "uniform":
        return init_uniform_(module, scale)
    if scheme == "xavier":
        return init_xavier_(module)
    raise ValueError(f"init={scheme!r} is unknown; choose one of {', '.join(INITS)}")
