"""LSTM building blocks shared by the encoder and the decoder (plain PyTorch).

:func:`ragged_lstm` runs the parameters of an ``nn.LSTM`` over a batch of sentences of
different lengths the way a packed sequence does (each row stops at its own end), but
with the layout of a fused RNN kernel: the input projection ``W_ih x`` of a layer is one
matrix product over every real token, and only ``W_hh h_{t-1}`` runs step by step. On CPU
its backward pass is also cheaper than ``nn.LSTM`` on a ``PackedSequence``, whose per-step
slices of the projected input each cost a full-size zero fill and add. The results equal
``nn.LSTM`` on the packed batch (``tests/test_nn_model.py``).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn
from torch.autograd import Function
from torch.nn import functional as F
from torch.nn.utils.rnn import PackedSequence, pack_padded_sequence

from luong_lit.nn.fast.fused_cell import fused_lstm_cell

#: each step's ``(x_t, delta_t)``, left by the backward of its product for the one sum
Pairs = list[tuple[Tensor, Tensor]]


class _CollectGrad(Function):
    """Identity on ``W``; its backward sums the steps' weight gradients in one product.

    It runs after the backward of every :class:`_StepAddmm` that used ``W`` (they consume
    its output), which leave their ``(x_t, delta_t)`` pairs in ``pairs``.
    """

    @staticmethod
    def forward(ctx: Any, W: Tensor, pairs: Pairs) -> Tensor:
        ctx.pairs = pairs  # detached tensors only: no reference cycle through the graph
        ctx.set_materialize_grads(False)
        return W.view_as(W)

    @staticmethod
    def backward(ctx: Any, grad: Tensor | None) -> tuple[Tensor | None, None]:
        if not ctx.pairs:
            return grad, None
        xs, deltas = zip(*ctx.pairs)
        ctx.pairs.clear()
        dW = torch.cat(xs).t() @ torch.cat(deltas)  # (in, out) = sum_t x_t^T delta_t
        return (dW if grad is None else dW + grad), None


class _StepAddmm(Function):
    """``base + x_t W`` whose backward returns the gradients of ``base`` and ``x_t`` only."""

    @staticmethod
    def forward(ctx: Any, base: Tensor | None, x: Tensor, W: Tensor, pairs: Pairs) -> Tensor:
        x = x.to(W.dtype)  # (n, in) mixed precision: h_{t-1} may still be fp32 at t = 1
        ctx.save_for_backward(x, W)
        ctx.pairs, ctx.base_dim = pairs, None if base is None else base.dim()
        return x @ W if base is None else torch.addmm(base, x, W)  # (n, out)

    @staticmethod
    def backward(ctx: Any, delta: Tensor) -> tuple[Tensor | None, Tensor | None, None, None]:
        x, W = ctx.saved_tensors
        ctx.pairs.append((x.detach(), delta))
        d_base = None if ctx.base_dim is None else (delta.sum(0) if ctx.base_dim == 1 else delta)
        d_x = delta @ W.t() if ctx.needs_input_grad[1] else None  # (n, in)
        return d_base, d_x, None, None


class RecurrentWeight:
    """A weight ``W`` (in, out) applied once per time step: ``base + x_t W``.

    Under autograd the per-step products ``x_tᵀ delta_t`` of the weight gradient, each
    with only ``n_t`` rows, are replaced by one product over all steps, as fused RNN
    kernels do, and the gradient is no longer accumulated step by step. The result is the
    same sum (``tests/test_engines.py``). Without autograd it is a plain ``addmm``.
    Under autocast ``W`` is cast once to the autocast dtype, not at every step. ``defer=False``
    keeps autograd's own step-by-step sum (a compiled step cannot hold the deferred products),
    and ``W`` in its own dtype: autocast casts it at each step, and the cast's backward adds
    the steps' gradients up in ``W``'s dtype (fp32), not in bf16.
    """

    def __init__(self, W: Tensor, defer: bool = True) -> None:
        if defer and torch.is_autocast_enabled(W.device.type):
            W = W.to(torch.get_autocast_dtype(W.device.type))  # (in, out) bf16/fp16 copy
        self._pairs: Pairs = []
        self.deferred = defer and torch.is_grad_enabled() and W.requires_grad
        self.W: Tensor = _CollectGrad.apply(W, self._pairs) if self.deferred else W  # type: ignore[no-untyped-call]

    def addmm(self, base: Tensor | None, x: Tensor) -> Tensor:
        """``base + x W`` for ``x`` (n, in); ``base`` is (n, out), (out,) or None."""
        if self.deferred:
            out: Tensor = _StepAddmm.apply(base, x, self.W, self._pairs)  # type: ignore[no-untyped-call]
            return out
        return x @ self.W if base is None else torch.addmm(base, x, self.W)


def pack_ids(
    ids: Tensor, lengths: Tensor, sorted_rows: bool = False
) -> tuple[PackedSequence, Tensor]:
    """Pack right-padded token ids (B, T) time-major, and where each packed row goes back.

    Returns the packed ids (``data`` (N,), one per real token) and ``flat_index`` (N,): the
    position ``b * T + t`` of each packed row in the padded batch, for :func:`unpack`.
    """
    B, T = ids.shape
    lengths = lengths.cpu()
    packed = pack_padded_sequence(ids, lengths, batch_first=True, enforce_sorted=sorted_rows)
    flat = torch.arange(B * T, device=ids.device).view(B, T)  # (B, T)
    return packed, pack_padded_sequence(
        flat, lengths, batch_first=True, enforce_sorted=sorted_rows
    ).data


def unpack(data: Tensor, flat_index: Tensor, B: int, T: int) -> Tensor:
    """Packed rows ``data`` (N, d) back to a zero-padded (B, T, d) batch in one copy.

    ``pad_packed_sequence`` copies one slice per step; under autograd each slice's
    backward fills a zero tensor of the full packed size. Here the backward is one gather.
    """
    out = data.new_zeros(B * T, data.size(-1)).index_copy(0, flat_index, data)  # (B*T, d)
    return out.view(B, T, -1)


def lstm_cell(gates: Tensor, c: Tensor) -> tuple[Tensor, Tensor]:
    """LSTM update from pre-activation ``gates`` (B, 4d) in ``nn.LSTM``'s i, f, g, o order:
    ``c_t = σ(f) ⊙ c_{t-1} + σ(i) ⊙ tanh(g)``, ``h_t = σ(o) ⊙ tanh(c_t)``. On CUDA,
    :func:`~luong_lit.nn.fast.fused_cell.fused_lstm_cell`; elsewhere, and in a compiled step
    (``engine.compile=step``, whose compiler fuses these operators itself and would run the
    fused kernel as an opaque call), the eight operators below."""
    if gates.is_cuda and not torch.compiler.is_compiling():
        return fused_lstm_cell(gates, c)  # (B, d) x2
    i, f, g, o = gates.chunk(4, 1)  # (B, d) each; chunk's backward is one cat, not 4 fills
    c = torch.addcmul(torch.sigmoid(f) * c, torch.sigmoid(i), torch.tanh(g))  # (B, d)
    return torch.sigmoid(o) * torch.tanh(c), c


def summed_bias(rnn: nn.LSTM, l: int) -> Tensor | None:
    """``b_ih + b_hh`` of layer ``l`` (4d,), or None for an LSTM without biases."""
    if not rnn.bias:
        return None
    b: Tensor = getattr(rnn, f"bias_ih_l{l}") + getattr(rnn, f"bias_hh_l{l}")  # (4d,)
    return b


def _layer(
    x: Tensor, batch_sizes: list[int], rnn: nn.LSTM, l: int
) -> tuple[Tensor, Tensor, Tensor]:
    """One layer over time-major packed ``x`` (N, in): outputs (N, d), final ``h`` and ``c`` (B, d).

    Rows are sorted longest first, so the ``n_t = batch_sizes[t]`` running rows at step
    ``t`` are the first ones; a row's final state is taken when it stops.
    """
    x_all = F.linear(x, getattr(rnn, f"weight_ih_l{l}"), summed_bias(rnn, l))  # (N, 4d)
    x_proj = torch.split(x_all, batch_sizes)  # T x (n_t, 4d)
    W_hh = RecurrentWeight(getattr(rnn, f"weight_hh_l{l}").t())  # (d, 4d)
    h = c = x.new_zeros(batch_sizes[0], rnn.hidden_size)  # (B, d)
    outs, h_end, c_end = [], [], []
    for x_t, n in zip(x_proj, batch_sizes):
        if n < h.size(0):  # rows n.. have ended
            h_end.append(h[n:])
            c_end.append(c[n:])
            h, c = h[:n], c[:n]
        h, c = lstm_cell(W_hh.addmm(x_t, h), c)  # (n_t, d) x2
        outs.append(h)
    h_end.append(h)
    c_end.append(c)
    return torch.cat(outs), torch.cat(h_end[::-1]), torch.cat(c_end[::-1])


def ragged_lstm(
    packed: PackedSequence, rnn: nn.LSTM
) -> tuple[PackedSequence, tuple[Tensor, Tensor]]:
    """``rnn(packed)`` for a batch-first ``nn.LSTM`` from a zero state, computed as above.

    ``rnn.dropout`` is applied to the input of every layer after the first, as ``nn.LSTM``
    does. Returns the top layer's outputs, packed like the input, and the final ``(h, c)``,
    each (L, B, d) in the original row order.
    """
    batch_sizes = packed.batch_sizes.tolist()
    data, hs, cs = packed.data, [], []  # (N, in)
    for l in range(rnn.num_layers):
        if l > 0:
            data = F.dropout(data, rnn.dropout, rnn.training)
        data, h, c = _layer(data, batch_sizes, rnn, l)  # (N, d), (B, d) x2
        hs.append(h)
        cs.append(c)
    h_n, c_n = torch.stack(hs), torch.stack(cs)  # (L, B, d) in sorted order
    if packed.unsorted_indices is not None:
        h_n, c_n = (
            h_n.index_select(1, packed.unsorted_indices),
            c_n.index_select(1, packed.unsorted_indices),
        )
    out = PackedSequence(data, packed.batch_sizes, packed.sorted_indices, packed.unsorted_indices)
    return out, (h_n, c_n)
