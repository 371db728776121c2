"""The fused LSTM cell of CUDA (plain PyTorch): what ``nn.LSTMCell`` runs there.

``aten::_thnn_fused_lstm_cell`` is torch's own kernel behind ``nn.LSTMCell`` and
``torch.lstm_cell`` on CUDA; no public function takes the gates already computed (the kit's
products make them itself: :class:`~luong_lit.nn.fast.lstm.RecurrentWeight`), so the operator is
called by its name here, in this one module. It has no CPU kernel.
"""

from __future__ import annotations

import torch
from torch import Tensor


def fused_lstm_cell(gates: Tensor, c: Tensor) -> tuple[Tensor, Tensor]:
    """:func:`~luong_lit.nn.fast.lstm.lstm_cell` as one fused kernel forward and one backward,
    what ``nn.LSTMCell`` runs on CUDA (``aten::_thnn_fused_lstm_cell``; CUDA only), in place
    of eight operators forward and about thirteen backward. The cell is computed in ``c``'s
    dtype (fp32 under bf16-mixed, as the eight operators' products with ``c`` are promoted
    to)."""
    gates = gates.to(c.dtype)  # (B, 4d); under autocast the product came out in bf16
    with torch.autocast(c.device.type, enabled=False):  # the kernel reads one dtype
        h, c_new, _ = torch.ops.aten._thnn_fused_lstm_cell(gates, torch.zeros_like(gates), c)
    return h, c_new  # (B, d) x2
