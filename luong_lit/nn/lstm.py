"""LSTM building blocks shared by the encoder and the decoder (plain PyTorch).

:func:`ragged_lstm` runs the parameters of an ``nn.LSTM`` over a batch of sentences of
different lengths the way a packed sequence does (each row stops at its own end), but
with the layout of a fused RNN kernel: the input projection ``W_ih x`` of a layer is one
matrix product over every real token, and only ``W_hh h_{t-1}`` runs step by step. On CPU
its backward pass is also cheaper than ``nn.LSTM`` on a ``PackedSequence``, whose per-step
slices of the projected input each cost a full-size zero fill and add. The results equal
``nn.LSTM`` on the packed batch (``tests/test_model.py``).
"""
from __future__ import annotations

import torch
from torch import Tensor, nn
from torch.nn import functional as F
from torch.nn.utils.rnn import PackedSequence


def lstm_cell(gates: Tensor, c: Tensor) -> tuple[Tensor, Tensor]:
    """LSTM update from pre-activation ``gates`` (B, 4d) in ``nn.LSTM``'s i, f, g, o order."""
    i, f, g, o = gates.chunk(4, 1)  # (B, d) each; chunk's backward is one cat, not 4 fills
    c = torch.addcmul(torch.sigmoid(f) * c, torch.sigmoid(i), torch.tanh(g))  # (B, d)
    return torch.sigmoid(o) * torch.tanh(c), c


def summed_bias(rnn: nn.LSTM, l: int) -> Tensor | None:
    """``b_ih + b_hh`` of layer ``l`` (4d,), or None for an LSTM without biases."""
    if not rnn.bias:
        return None
    return getattr(rnn, f"bias_ih_l{l}") + getattr(rnn, f"bias_hh_l{l}")


def _layer(x: Tensor, batch_sizes: list[int], rnn: nn.LSTM, l: int) -> tuple[Tensor, Tensor, Tensor]:
    """One layer over time-major packed ``x`` (N, in): outputs (N, d), final ``h`` and ``c`` (B, d).

    Rows are sorted longest first, so the ``n_t = batch_sizes[t]`` running rows at step
    ``t`` are the first ones; a row's final state is taken when it stops.
    """
    x_proj = F.linear(x, getattr(rnn, f"weight_ih_l{l}"), summed_bias(rnn, l)).split(batch_sizes)  # T x (n_t, 4d)
    W_hh = getattr(rnn, f"weight_hh_l{l}").t()  # (d, 4d)
    h = c = x.new_zeros(batch_sizes[0], rnn.hidden_size)  # (B, d)
    outs, h_end, c_end = [], [], []
    for x_t, n in zip(x_proj, batch_sizes):
        if n < h.size(0):  # rows n.. have ended
            h_end.append(h[n:])
            c_end.append(c[n:])
            h, c = h[:n], c[:n]
        h, c = lstm_cell(torch.addmm(x_t, h, W_hh), c)  # (n_t, d) x2
        outs.append(h)
    h_end.append(h)
    c_end.append(c)
    return torch.cat(outs), torch.cat(h_end[::-1]), torch.cat(c_end[::-1])


def ragged_lstm(packed: PackedSequence, rnn: nn.LSTM) -> tuple[PackedSequence, tuple[Tensor, Tensor]]:
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
        h_n, c_n = h_n.index_select(1, packed.unsorted_indices), c_n.index_select(1, packed.unsorted_indices)
    out = PackedSequence(data, packed.batch_sizes, packed.sorted_indices, packed.unsorted_indices)
    return out, (h_n, c_n)
