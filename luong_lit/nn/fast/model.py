"""The encoder and decoder of :mod:`luong_lit.nn`, computed faster with the same parameters.

:class:`FastEncoder` runs the LSTM over the real tokens of a ragged batch on the CPU
(:func:`~.lstm.ragged_lstm`) and cuDNN on a GPU. :class:`FastDecoder` unrolls the input-feeding
decoder over the rows still running: rows are sorted by target length, so at step ``t`` only
the first ``n_t`` rows are computed, as a packed sequence would do; layer 1's product with
the embeddings runs once for all steps, and the recurrent weights' gradients are summed once
over all steps (:class:`~.lstm.RecurrentWeight`).
"""

from __future__ import annotations

import torch
from torch import Tensor
from torch.nn import functional as F

from luong_lit.nn.attention import Alignment, Memory
from luong_lit.nn.decoder import Decoder, DecoderState
from luong_lit.nn.encoder import Encoder, reverse_index
from luong_lit.nn.fast.dropout import Dropout
from luong_lit.nn.fast.loss import linear_cross_entropy
from luong_lit.nn.fast.lstm import (
    RecurrentWeight,
    lstm_cell,
    pack_ids,
    ragged_lstm,
    summed_bias,
    unpack,
)


def fast_output_nll(
    h_tilde: Tensor,
    weight: Tensor,
    bias: Tensor | None,
    targets: Tensor,
    label_smoothing: float = 0.0,
    ignore_index: int = -100,
) -> Tensor:
    """:func:`luong_lit.nn.loss.output_nll`, fused and chunked (:mod:`.loss`)."""
    return linear_cross_entropy(
        h_tilde, weight, bias, targets, label_smoothing=label_smoothing, ignore_index=ignore_index
    )


class FastEncoder(Encoder):
    """:class:`~luong_lit.nn.encoder.Encoder` over the real tokens only."""

    Dropout = Dropout

    def forward(self, src: Tensor, src_len: Tensor) -> tuple[Tensor, tuple[Tensor, Tensor]]:
        S = src.size(1)
        if self.reverse_source:
            rev = reverse_index(src_len - int(self.eos_last), S)  # (B, S), its own inverse
            src = src.gather(1, rev)  # (B, S) reversed words, then </s> if eos_last, pads last
        ids, flat_index = pack_ids(src, src_len)  # real tokens only, time-major
        packed = ids._replace(data=self.dropout(self.embedding(ids.data)))  # (N, e)
        if src.is_cuda:
            out, (h, c) = self.rnn(packed)  # cuDNN
        else:
            out, (h, c) = ragged_lstm(packed, self.rnn)  # the same result, faster on CPU
        h_bar_s = unpack(out.data, flat_index, src.size(0), S)  # (B, S, d), zeros at padding
        return self._original_order(h_bar_s, src_len), (h, c)


def layer_weights(dec: Decoder) -> list[tuple[Tensor, Tensor | None]]:
    """Per layer: ``W`` (in+d, 4d) acting on ``[x_t; h_{t-1}]`` and the summed bias.

    For layer 1 with input feeding, ``x_t`` is only the ``h_tilde_{t-1}`` part; the embedding
    part is projected for all steps at once (:func:`project_embeddings`).
    """
    out = []
    for layer in range(dec.num_layers):
        w_ih, w_hh = (
            getattr(dec.rnn, f"weight_ih_l{layer}"),
            getattr(dec.rnn, f"weight_hh_l{layer}"),
        )
        if layer == 0:
            w_ih = w_ih[:, dec.embed_size :]  # the h_tilde columns (empty without feeding)
        out.append((torch.cat([w_ih, w_hh], 1).t(), summed_bias(dec.rnn, layer)))
    return out


def project_embeddings(dec: Decoder, x: Tensor) -> Tensor:
    """Layer 1's input weights on the embedding part: (..., e) -> (..., 4d)."""
    return F.linear(x, dec.rnn.weight_ih_l0[:, : dec.embed_size], summed_bias(dec.rnn, 0))


def cell_stack(
    dec: Decoder, x0: Tensor, h_tilde: Tensor, h: list[Tensor], c: list[Tensor], weights
) -> tuple[list[Tensor], list[Tensor]]:
    """Advance every LSTM layer by one step; ``x0`` is layer 1's embedding projection (n, 4d).

    States are per-layer lists: indexing a stacked (L, B, d) tensor at every step would cost a
    full-size zero fill per index in the backward pass.
    """
    hs, cs = [], []
    inp = dec.dropout(h_tilde) if dec.feed_input else None
    for layer, (W, b) in enumerate(weights):
        h_prev = h[layer]  # (n, d)
        if layer == 0:
            rec = h_prev if inp is None else torch.cat([inp, h_prev], 1)  # (n, d|2d)
            gates = W.addmm(x0, rec)  # (n, 4d)
        else:
            rec = torch.cat([dec.dropout(hs[-1]), h_prev], 1)  # (n, 2d)
            gates = W.addmm(b, rec)  # (n, 4d)
        h_new, c_new = lstm_cell(gates, c[layer])
        hs.append(h_new)
        cs.append(c_new)
    return hs, cs


class FastDecoder(Decoder):
    """:class:`~luong_lit.nn.decoder.Decoder` with the unrolled stack described above."""

    Dropout = Dropout

    def _embed_proj(self, y: Tensor) -> Tensor:
        """Layer-1 input projection of the (dropped-out) embeddings: (...,) ids -> (..., 4d)."""
        return project_embeddings(self, self.dropout(self.embedding(y)))  # (..., 4d)

    def _step_weights(self) -> list[tuple[RecurrentWeight, Tensor | None]]:
        return [(RecurrentWeight(W), b) for W, b in layer_weights(self)]

    def step(
        self, y_prev: Tensor, state: DecoderState, memory: Memory, t: int
    ) -> tuple[Tensor, DecoderState, Alignment | None]:
        x0 = self._embed_proj(y_prev)  # (B, 4d)
        h, c = cell_stack(
            self, x0, state.h_tilde, list(state.h), list(state.c), self._step_weights()
        )
        h_tilde, align = self.attend(h[-1].unsqueeze(1), memory, t)  # (B, 1, d)
        h_tilde = h_tilde.squeeze(1)  # (B, d)
        return h_tilde, DecoderState(torch.stack(h), torch.stack(c), h_tilde), align

    def forward(
        self, y_in: Tensor, state: DecoderState, memory: Memory, return_attention: bool = False
    ) -> tuple[Tensor, Tensor | None]:
        """As :meth:`Decoder.forward`; outputs at padded positions are zeros."""
        if not self.feed_input:
            return super().forward(y_in, state, memory, return_attention)
        h_tilde, dense = self._forward_feed(y_in, state, memory, return_attention)
        return self.output_dropout(h_tilde), dense

    def _sorted(self, y_in: Tensor, state: DecoderState, memory: Memory):
        """Rows by target length, longest first: ``y_in, lengths, state, memory, order``.

        ``order`` is None when the rows are in that order already."""
        B = y_in.size(0)
        lengths = (y_in != self.embedding.padding_idx).sum(1).clamp_min(1)  # (B,) steps per row
        order = torch.argsort(lengths, descending=True, stable=True)  # (B,)
        if not bool((order != torch.arange(B, device=order.device)).any()):
            return y_in, lengths, state, memory, None
        return (
            y_in[order],
            lengths[order],
            state.index_select(order),
            memory.index_select(order),
            order,
        )

    def _forward_feed(
        self, y_in: Tensor, state: DecoderState, memory: Memory, return_attention: bool
    ) -> tuple[Tensor, Tensor | None]:
        """The unrolled input-feeding path. Sentences that have ended drop out of the batch."""
        B, T = y_in.shape
        y_in, lengths, state, memory, order = self._sorted(y_in, state, memory)
        ids, flat_index = pack_ids(y_in, lengths, sorted_rows=True)  # real tokens, time-major
        if order is not None:  # unpack straight into the original row order
            flat_index = order[flat_index // T] * T + flat_index % T  # (N,)
        running = ids.batch_sizes.tolist()  # n_t: rows still running at step t
        weights = self._step_weights()
        x_proj = self._embed_proj(ids.data).split(
            running
        )  # T x (n_t, 4d); split's backward is one cat
        h, c, h_tilde = list(state.h.unbind(0)), list(state.c.unbind(0)), state.h_tilde
        outs, attns = [], []
        for t, (x_t, n) in enumerate(zip(x_proj, running)):
            if n < h_tilde.size(0):
                h, c, h_tilde = [x[:n] for x in h], [x[:n] for x in c], h_tilde[:n]
                memory = Memory(*(x[:n] for x in memory))
            h, c = cell_stack(self, x_t, h_tilde, h, c, weights)
            h_tilde, align = self.attend(h[-1].unsqueeze(1), memory, t)  # (n, 1, d)
            h_tilde = h_tilde.squeeze(1)  # (n, d)
            outs.append(h_tilde)
            if return_attention:
                attns.append(_pad_rows(align.dense(memory.h_bar_s.size(1)), B))  # (B, 1, S)
        out = unpack(torch.cat(outs), flat_index, B, T)  # (B, T, d)
        if not return_attention:
            return out, None
        attns += [attns[0].new_zeros(B, 1, attns[0].size(-1))] * (T - len(attns))
        dense = torch.cat(attns, 1)  # (B, T, S)
        return out, dense if order is None else dense[torch.argsort(order)]


def _pad_rows(x: Tensor, B: int) -> Tensor:
    """Zero rows appended to ``x`` (n, ...) up to ``B`` rows."""
    if x.size(0) == B:
        return x
    return torch.cat([x, x.new_zeros(B - x.size(0), *x.shape[1:])], 0)
