"""Optional int8 decoding: the decoder's matrix products as 8-bit products.

The output layer ``W_s`` (paper Eq. 6) is about half of the work of beam search on a small
model, and the decoder's LSTM layers and ``W_c`` (Eq. 5) most of the rest. With
:func:`quantize_for_decoding` these come from PyTorch's dynamically quantised linear product
(fbgemm on x86): each weight is stored as int8 with one scale per output row, each batch of
input rows is quantised on the fly, and the product runs in integer arithmetic.
``parts="output"`` quantises ``W_s`` only; ``parts="all"`` also the decoder's LSTM weights
and ``W_c``. The encoder, the attention scores and the embedding lookups stay float.

Training, teacher-forced scoring (perplexity, forced alignment) and every path under
autograd keep the float weights; only the step-by-step decoding changes. The results are
approximate, so translations can differ from those of the float model: this is an opt-in
speed/accuracy trade (``translate --int8 [output|all]``), never the default.
"""
from __future__ import annotations

import contextlib
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
        """(..., d) float rows -> (..., V) float outputs."""
        x2 = x.reshape(-1, x.size(-1)).float().contiguous()  # (n, d)
        return torch.ops.quantized.linear_dynamic(x2, self.packed, True).view(*x.shape[:-1], -1)


class Int8Recurrent:
    """:class:`~luong_lit.nn.lstm.RecurrentWeight`'s ``base + x W`` with ``W`` (in, out) in int8."""

    def __init__(self, W: Tensor) -> None:
        self.linear = Int8Linear(W.t(), None)  # (out, in) rows, one scale each

    def addmm(self, base: Tensor | None, x: Tensor) -> Tensor:
        out = self.linear(x)  # (n, out)
        return out if base is None else out.add_(base)


PARTS = ("output", "all")


def quantize_for_decoding(net, parts: str = "output") -> None:
    """Give ``net`` (a :class:`~luong_lit.nn.Seq2Seq`, or an ensemble of them) int8 decoding.

    The int8 matrices are a snapshot of the weights: call this after loading, not before
    training. ``parts``: ``output`` (``W_s``) or ``all`` (also the LSTM layers and ``W_c``).
    """
    if parts not in PARTS:
        raise ValueError(f"int8 parts must be one of {PARTS}, got {parts!r}")
    for model in getattr(net, "members", [net]):
        dec = model.decoder
        model.int8_output = Int8Linear(dec.W_s.weight, dec.W_s.bias)
        if parts == "all":
            dec.int8 = {"layers": [(Int8Recurrent(W), b) for W, b in dec._layer_weights()],
                        "W_c": None if dec.W_c is None else Int8Linear(dec.W_c.weight, dec.W_c.bias)}


@contextlib.contextmanager
def float_weights(net):
    """Within the block, ``net`` (or each ensemble member) steps with its float weights again.

    Scoring (perplexity) must not change with ``--int8``; only the search may.
    """
    models = list(getattr(net, "members", [net]))
    saved = [(m.int8_output, m.decoder.int8) for m in models]
    for m in models:
        m.int8_output, m.decoder.int8 = None, None
    try:
        yield net
    finally:
        for m, (out, dec) in zip(models, saved):
            m.int8_output, m.decoder.int8 = out, dec
