"""8-bit matrix products for decoding (``translate --int8 [output|all]``).

The output layer ``W_s`` (paper Eq. 6) is a large part of the work of beam search on a small
model, and the decoder's LSTM layers and ``W_c`` (Eq. 5) most of the rest. These classes use
PyTorch's dynamically quantised linear product (fbgemm on x86): each weight is stored as int8
with one scale per output row, each batch of input rows is quantised on the fly, and the
product runs in integer arithmetic. :class:`~.decoding.FastStepper` builds them at decoding
time; ``output`` quantises ``W_s`` only, ``all`` also the decoder's LSTM weights and ``W_c``.
The encoder, the attention scores and the embedding lookups stay float, as do training and
teacher-forced scoring. The results are approximate, so translations can differ from those
of the float model: an opt-in speed/accuracy trade, never the default.
"""

from __future__ import annotations

import warnings

import torch
from torch import Tensor


class QuantizationUnavailable(RuntimeError):
    """This PyTorch build has no int8 dynamic linear kernels."""


class Int8Linear:
    """``x W^T + b`` with ``W`` (V, d) quantised per row to int8 and ``x`` per call."""

    def __init__(self, weight: Tensor, bias: Tensor | None) -> None:
        if weight.device.type != "cpu":
            raise QuantizationUnavailable("int8 decoding runs on the CPU only")
        W = weight.detach().float()  # (V, d)
        scales = (W.abs().amax(1) / 127.0).clamp_min(1e-12).double()  # (V,) one scale per row
        zeros = torch.zeros_like(scales, dtype=torch.long)
        b = None if bias is None else bias.detach().float()
        try:
            with warnings.catch_warnings():  # recent torch marks quantised tensors deprecated
                warnings.simplefilter("ignore", UserWarning)
                qW = torch.quantize_per_channel(W, scales, zeros, 0, torch.qint8)
                self.packed = torch.ops.quantized.linear_prepack(qW, b)
        except (RuntimeError, AttributeError, NotImplementedError) as err:
            raise QuantizationUnavailable(
                f"int8 linear kernels are unavailable here: {err}"
            ) from None

    def __call__(self, x: Tensor) -> Tensor:
        """(..., d) float rows -> (..., V) float outputs."""
        x2 = x.reshape(-1, x.size(-1)).float().contiguous()  # (n, d)
        out: Tensor = torch.ops.quantized.linear_dynamic(x2, self.packed, True)  # (n, V)
        return out.view(*x.shape[:-1], -1)


class Int8Recurrent:
    """:class:`~.lstm.RecurrentWeight`'s ``base + x W`` with ``W`` (in, out) in int8."""

    def __init__(self, W: Tensor) -> None:
        self.linear = Int8Linear(W.t(), None)  # (out, in) rows, one scale each

    def addmm(self, base: Tensor | None, x: Tensor) -> Tensor:
        out = self.linear(x)  # (n, out)
        return out if base is None else out.add_(base)


PARTS = ("output", "all")
