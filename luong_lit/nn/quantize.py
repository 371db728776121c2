"""Optional int8 decoding: the output layer ``W_s`` (paper Eq. 6) as an 8-bit matrix product.

The output layer is about half of the work of beam search on a small model. With
:func:`quantize_for_decoding` the decoding-time logits come from PyTorch's dynamically
quantised linear product (fbgemm on x86): ``W_s`` is stored as int8 with one scale per
vocabulary row, each batch of ``h_tilde_t`` rows is quantised on the fly, and the product
runs in integer arithmetic. Training, teacher-forced scoring (perplexity, forced alignment)
and every path under autograd keep the float weights; only :meth:`Seq2Seq.logits` during
decoding changes. The logits are approximate, so translations can differ from those of the
float model: this is an opt-in speed/accuracy trade (``translate --int8``), never the default.
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
            raise QuantizationUnavailable(f"int8 linear kernels are unavailable here: {err}") from None

    def __call__(self, x: Tensor) -> Tensor:
        """(n, d) float rows -> (n, V) float logits."""
        return torch.ops.quantized.linear_dynamic(x.float().contiguous(), self.packed, True)


def quantize_for_decoding(net) -> None:
    """Give ``net`` (a :class:`~luong_lit.nn.Seq2Seq`, or an ensemble of them) int8 decoding logits.

    The int8 matrix is a snapshot of ``W_s``: call this after loading, not before training.
    """
    for model in getattr(net, "members", [net]):
        W_s = model.decoder.W_s
        model.int8_output = Int8Linear(W_s.weight, W_s.bias)
