"""The operators a step dispatches on CUDA, counted on a CPU: the kit's CUDA-only choices made
on the CPU, with CPU kernels standing in for the one CUDA-only operator among them.

On CUDA the kit computes an LSTM cell with ``aten::_thnn_fused_lstm_cell`` (one kernel forward,
one backward: ``luong_lit.nn.fast.fused_cell.fused_lstm_cell``) and dropout with ``F.dropout`` (one
``native_dropout`` each way); on the CPU the cell is eight operators forward and the dropout
mask is drawn as uniform floats (``luong_lit.nn.fast.dropout``) or by ``F.dropout``'s CPU
path (a Bernoulli draw, a division and a product). :func:`as_on_cuda` makes the
CUDA choices on CPU tensors: the fused cell's two operators get CPU kernels (registered for
this process only; the same arithmetic), and dropout calls ``native_dropout``. A dispatch
mode then counts each as one operator, as on CUDA. What stays a CPU count: the encoder's
whole-sequence LSTM call (``mkldnn_rnn_layer`` here, cuDNN's call there: one operator a layer
each way in both) and what cuDNN adds (its weights' flattening).

Used by ``python -m scripts.benchmarks.host_reads``; never imported by the kit.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch
from torch import Tensor
from torch.nn import functional as F

dropout = F.dropout  # torch's own, put back on leaving


def _cell(ig: Tensor, hg: Tensor, cx: Tensor, ib=None, hb=None) -> tuple[Tensor, Tensor, Tensor]:
    """``_thnn_fused_lstm_cell``'s arithmetic: ``h``, ``c`` and the activated gates kept for
    the backward (its workspace)."""
    gates = ig + hg if ib is None else ig + hg + ib + hb  # (B, 4d)
    i, f, g, o = gates.chunk(4, 1)
    i, f, g, o = i.sigmoid(), f.sigmoid(), g.tanh(), o.sigmoid()
    cy = f * cx + i * g  # (B, d)
    return o * cy.tanh(), cy, torch.cat([i, f, g, o], 1)


def _cell_backward(dh, dc, cx, cy, workspace, has_bias) -> tuple[Tensor, Tensor, Tensor | None]:
    """``_thnn_fused_lstm_cell_backward_impl``: the gates', ``c_{t-1}``'s and the bias' grads."""
    i, f, g, o = workspace.chunk(4, 1)
    tc = cy.tanh()
    dh = torch.zeros_like(cy) if dh is None else dh
    dc = (torch.zeros_like(cy) if dc is None else dc) + dh * o * (1 - tc * tc)
    d_gates = torch.cat(
        [dc * g * i * (1 - i), dc * cx * f * (1 - f), dc * i * (1 - g * g), dh * tc * o * (1 - o)],
        1,
    )  # (B, 4d)
    return d_gates, dc * f, d_gates.sum(0) if has_bias else None


def _native_dropout(x: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False):
    """``F.dropout`` as CUDA runs it: one ``native_dropout``."""
    if not training or p == 0.0:
        return x
    return torch.ops.aten.native_dropout(x, p, True)[0]


@contextmanager
def as_on_cuda() -> Iterator[None]:
    """The kit's CUDA choices on the CPU while inside: the fused cell and ``F.dropout``."""
    from luong_lit.nn.fast import fused_cell, lstm, model, static

    lib = torch.library.Library("aten", "IMPL")
    lib.impl("_thnn_fused_lstm_cell", _cell, "CPU")
    lib.impl("_thnn_fused_lstm_cell_backward_impl", _cell_backward, "CPU")
    saved = {m: (m.lstm_cell, getattr(m, "dropout", None)) for m in (lstm, model, static)}
    for m in saved:
        m.lstm_cell = fused_cell.fused_lstm_cell
    model.dropout, F.dropout = _native_dropout, _native_dropout  # F's: the encoder's layers
    try:
        yield
    finally:
        for m, (cell, _) in saved.items():
            m.lstm_cell = cell
        model.dropout, F.dropout = saved[model][1], dropout
        lib._destroy()
