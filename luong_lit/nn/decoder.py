"""Stacked LSTM decoder with attention and input feeding (paper §3 and §3.3, EMNLP numbering).

At step ``t`` the decoder reads ``y_{t-1}`` (and, with input feeding, ``h_tilde_{t-1}``),
computes the top-layer state ``h_t``, attends to get ``c_t``, and forms the attentional
vector ``h_tilde_t = tanh(W_c [c_t; h_t])`` (Eq. 5, context first as in nmt.matlab).
``p(y_t | y_<t, x) = softmax(W_s h_tilde_t)`` (Eq. 6). Without attention the prediction
uses ``h_t`` directly (Eq. 2).

Two paths share one set of ``nn.LSTM`` parameters:

* without input feeding the whole target is read by ``nn.LSTM`` at once and attention is
  computed for all ``T`` queries in one call;
* with input feeding the stack is unrolled step by step (layer 1 needs ``h_tilde_{t-1}``).
  The embedding half of layer 1's input projection is still computed for all steps at once,
  over the real (non-pad) tokens.
"""
from __future__ import annotations

from typing import NamedTuple

import torch
from torch import Tensor, nn
from torch.nn import functional as F

from luong_lit.nn.attention import Alignment, Memory, _Attention
from luong_lit.nn.dropout import Dropout
from luong_lit.nn.lstm import RecurrentWeight, lstm_cell, pack_ids, summed_bias, unpack


class DecoderState(NamedTuple):
    """Recurrent state carried between decoder steps (reordered by beam search)."""

    h: Tensor  # (L, B, d)
    c: Tensor  # (L, B, d)
    h_tilde: Tensor  # (B, d) previous attentional vector, zeros before step 1

    def index_select(self, idx: Tensor) -> "DecoderState":
        return DecoderState(self.h.index_select(1, idx), self.c.index_select(1, idx),
                            self.h_tilde.index_select(0, idx))


class Decoder(nn.Module):
    """Target embedding, stacked LSTM, attention, attentional layer ``W_c`` and softmax ``W_s``.

    Dropout (spec §7) is applied to the input of every LSTM layer, i.e. to the embedding,
    to ``h_tilde_{t-1}`` when it is fed, and to the lower layer's ``h_t``; never to the
    recurrent state, the attention weights, or ``h_tilde_t`` before the softmax.
    ``hidden_dropout`` optionally drops ``[c_t; h_t]`` before ``W_c`` (Joey NMT's placement).
    ``output_dropout`` optionally drops ``h_tilde_t`` before ``W_s`` in training (Zaremba et
    al. 2014 and OpenNMT-py's placement; the fed-back ``h_tilde_t`` keeps its own input
    dropout). ``tie_output`` shares the target embedding matrix with ``W_s`` (Press & Wolf, 2017).
    """

    def __init__(
        self,
        vocab_size: int,
        embed_size: int,
        hidden_size: int,
        num_layers: int,
        attention: _Attention | None,
        feed_input: bool = True,
        dropout: float = 0.0,
        bias: bool = True,
        pad_id: int = 0,
        hidden_dropout: float = 0.0,
        tie_output: bool = False,
        output_dropout: float = 0.0,
    ) -> None:
        super().__init__()
        self.attention, self.feed_input = attention, feed_input
        self.embed_size, self.hidden_size, self.num_layers = embed_size, hidden_size, num_layers
        self.embedding = nn.Embedding(vocab_size, embed_size, padding_idx=pad_id)
        self.dropout = Dropout(dropout)
        self.hidden_dropout = Dropout(hidden_dropout)
        self.output_dropout = Dropout(output_dropout)
        in_size = embed_size + (hidden_size if feed_input else 0)
        self.rnn = nn.LSTM(in_size, hidden_size, num_layers, bias=bias, batch_first=True,
                           dropout=dropout if num_layers > 1 else 0.0)
        self.W_c = nn.Linear(2 * hidden_size, hidden_size, bias=bias) if attention is not None else None
        self.W_s = nn.Linear(hidden_size, vocab_size, bias=bias)
        if tie_output:  # one (V, d) matrix embeds y_{t-1} and scores y_t (needs e == d)
            self.W_s.weight = self.embedding.weight
        self._cache: tuple | None = None  # (parameter versions, decoding constants)
        self.int8: dict | None = None  # set by quantize_for_decoding(parts="all"): decoding only

    # ------------------------------------------------------------------ weights
    def _layer_weights(self) -> list[tuple[Tensor, Tensor | None]]:
        """Per layer: ``W`` (in+d, 4d) acting on ``[x_t; h_{t-1}]`` and the summed bias.

        For layer 1 with input feeding, ``x_t`` is only the ``h_tilde_{t-1}`` part; the
        embedding part is projected for all steps at once (see :meth:`_embed_proj`).
        """
        out = []
        for l in range(self.num_layers):
            w_ih, w_hh = getattr(self.rnn, f"weight_ih_l{l}"), getattr(self.rnn, f"weight_hh_l{l}")
            if l == 0:
                w_ih = w_ih[:, self.embed_size:]  # the h_tilde columns (empty without feeding)
            out.append((torch.cat([w_ih, w_hh], 1).t(), summed_bias(self.rnn, l)))
        return out

    def train(self, mode: bool = True) -> "Decoder":
        """Also forgets the decoding weights: fused optimizers update parameters in place
        without bumping their version counters, so the version check alone would miss it."""
        self._cache = None
        return super().train(mode)

    def _decoding_cache(self) -> dict:
        """Constants of decoding without autograd, kept while the parameters stay the same.

        Filled lazily by :meth:`_step_weights` (``weights``) and :meth:`_step_input`
        (``table``). It is dropped by :meth:`train` / ``eval()``, by every forward pass
        under autograd, when a parameter is replaced or edited in place, and when autocast
        is switched on or off (its weights are then in another dtype).
        """
        params = [*self.rnn.parameters(), self.embedding.weight]
        device = self.embedding.weight.device.type
        amp = torch.get_autocast_dtype(device) if torch.is_autocast_enabled(device) else None
        key = (amp, *((p.data_ptr(), p._version) for p in params))
        if self._cache is None or self._cache[0] != key:
            self._cache = (key, {})
        return self._cache[1]

    def _step_weights(self, cache: dict | None = None) -> list[tuple[RecurrentWeight, Tensor | None]]:
        """:meth:`_layer_weights` as :class:`RecurrentWeight` s for the unrolled stack.

        Under autograd they are built afresh (their gradients are summed over the steps);
        without it (decoding, validation) they live in :meth:`_decoding_cache`.
        """
        if torch.is_grad_enabled():
            return [(RecurrentWeight(W), b) for W, b in self._layer_weights()]
        cache = self._decoding_cache() if cache is None else cache
        if "weights" not in cache:
            cache["weights"] = [(RecurrentWeight(W), b) for W, b in self._layer_weights()]
        return cache["weights"]

    def _step_input(self, y_prev: Tensor, cache: dict) -> Tensor:
        """Layer 1's projection of ``emb(y_{t-1})`` when decoding: (B,) ids -> (B, 4d).

        Looked up in a table holding the projection of every target word, computed once per
        set of weights: a gather instead of a matrix product per step.
        """
        if "table" not in cache:
            cache["table"] = self._project(self.embedding.weight)  # (V, 4d)
        return cache["table"].index_select(0, y_prev)  # (B, 4d)

    def _embed_proj(self, y: Tensor) -> Tensor:
        """Layer-1 input projection of the (dropped-out) embeddings: (...,) ids -> (..., 4d)."""
        return self._project(self.dropout(self.embedding(y)))  # (..., 4d)

    def _project(self, x: Tensor) -> Tensor:
        """Layer 1's input weights on the embedding part: (..., e) -> (..., 4d)."""
        return F.linear(x, self.rnn.weight_ih_l0[:, : self.embed_size], summed_bias(self.rnn, 0))

    # ------------------------------------------------------------------ one step
    def _cell_stack(self, x0: Tensor, h_tilde: Tensor, h: list[Tensor], c: list[Tensor],
                    weights) -> tuple[list[Tensor], list[Tensor]]:
        """Advance every LSTM layer by one step; ``x0`` is layer 1's embedding projection.

        States are per-layer lists: indexing a stacked (L, B, d) tensor at every step would
        cost a full-size zero fill per index in the backward pass.
        """
        hs, cs = [], []
        inp = self.dropout(h_tilde) if self.feed_input else None
        for l, (W, b) in enumerate(weights):
            h_prev = h[l]  # (B, d)
            if l == 0:
                rec = h_prev if inp is None else torch.cat([inp, h_prev], 1)  # (B, d|2d)
                gates = W.addmm(x0, rec)  # (B, 4d)
            else:
                rec = torch.cat([self.dropout(hs[-1]), h_prev], 1)  # (B, 2d)
                gates = W.addmm(b, rec)  # (B, 4d)
            h_new, c_new = lstm_cell(gates, c[l])
            hs.append(h_new)
            cs.append(c_new)
        return hs, cs

    def _attend(self, h_t: Tensor, memory: Memory, step: int, W_c=None) -> tuple[Tensor, Alignment | None]:
        """``h_tilde_t = tanh(W_c [c_t; h_t])`` (Eq. 5) for queries ``h_t`` (B, T, d).

        ``W_c`` replaces ``self.W_c`` (the int8 copy when decoding)."""
        if self.attention is None:
            return h_t, None
        c_t, align = self.attention(h_t, memory, step)  # (B, T, d)
        c_h = self.hidden_dropout(torch.cat([c_t, h_t], -1))  # (B, T, 2d)
        return torch.tanh((W_c or self.W_c)(c_h)), align  # (B, T, d)

    def step(self, y_prev: Tensor, state: DecoderState, memory: Memory, t: int
             ) -> tuple[Tensor, DecoderState, Alignment | None]:
        """One decoder step from ``y_{t-1}`` (B,): returns ``h_tilde_t`` (B, d), state, alignment."""
        int8 = {}
        if self.training or torch.is_grad_enabled():  # dropout on the embedding, or gradients
            x0, weights = self._embed_proj(y_prev), self._step_weights()  # (B, 4d)
        else:  # decoding: one cache lookup per step
            cache, int8 = self._decoding_cache(), self.int8 or {}
            x0 = self._step_input(y_prev, cache)  # (B, 4d)
            weights = int8.get("layers") or self._step_weights(cache)
        h, c = self._cell_stack(x0, state.h_tilde, list(state.h), list(state.c), weights)
        h_tilde, align = self._attend(h[-1].unsqueeze(1), memory, t, int8.get("W_c"))  # (B, 1, d)
        h_tilde = h_tilde.squeeze(1)  # (B, d)
        return h_tilde, DecoderState(torch.stack(h), torch.stack(c), h_tilde), align

    # ------------------------------------------------------------------ teacher forcing
    def forward(self, y_in: Tensor, state: DecoderState, memory: Memory,
                return_attention: bool = False) -> tuple[Tensor, Tensor | None]:
        """Teacher-forced decoding of ``y_in`` (B, T) (``<s> y_1 ... y_{T-1}``).

        Returns ``h_tilde`` (B, T, d) for every step (after ``output_dropout``, the input of
        ``W_s``) and, if asked, the dense attention weights (B, T, S).
        """
        if torch.is_grad_enabled():
            self._cache = None  # an optimizer step may follow (see :meth:`train`)
        if not self.feed_input:
            h_all, _ = self.rnn(self.dropout(self.embedding(y_in)), (state.h, state.c))  # (B, T, d)
            h_tilde, align = self._attend(h_all, memory, 0)
            dense = align.dense(memory.h_bar_s.size(1)) if (return_attention and align) else None
        else:
            h_tilde, dense = self._forward_feed(y_in, state, memory, return_attention)
        return self.output_dropout(h_tilde), dense

    def _forward_feed(self, y_in: Tensor, state: DecoderState, memory: Memory,
                      return_attention: bool) -> tuple[Tensor, Tensor | None]:
        """The unrolled input-feeding path. Sentences that have ended drop out of the batch.

        Rows are sorted by target length (longest first), so at step ``t`` only the first
        ``n_t`` rows are still running and the others are simply not computed, as a packed
        sequence would do. The embeddings are projected for the real tokens only, and the
        recurrent weights' gradients are summed once over all steps (:class:`RecurrentWeight`).
        Outputs at padded positions are zeros.
        """
        B, T = y_in.shape
        lengths = (y_in != self.embedding.padding_idx).sum(1).clamp_min(1)  # (B,) steps per row
        order = torch.argsort(lengths, descending=True, stable=True)  # (B,)
        permuted = bool((order != torch.arange(B, device=order.device)).any())
        if permuted:
            y_in, lengths = y_in[order], lengths[order]
            state, memory = state.index_select(order), memory.index_select(order)
        ids, flat_index = pack_ids(y_in, lengths, sorted_rows=True)  # real tokens, time-major
        if permuted:  # unpack straight into the original row order
            flat_index = order[flat_index // T] * T + flat_index % T  # (N,)
        running = ids.batch_sizes.tolist()  # n_t: rows still running at step t
        weights = self._step_weights()
        x_proj = self._embed_proj(ids.data).split(running)  # T x (n_t, 4d); split's backward is one cat
        h, c, h_tilde = list(state.h.unbind(0)), list(state.c.unbind(0)), state.h_tilde
        outs, attns = [], []
        for t, (x_t, n) in enumerate(zip(x_proj, running)):
            if n < h_tilde.size(0):
                h, c, h_tilde = [x[:n] for x in h], [x[:n] for x in c], h_tilde[:n]
                memory = Memory(*(x[:n] for x in memory))
            h, c = self._cell_stack(x_t, h_tilde, h, c, weights)
            h_tilde, align = self._attend(h[-1].unsqueeze(1), memory, t)  # (n, 1, d)
            h_tilde = h_tilde.squeeze(1)  # (n, d)
            outs.append(h_tilde)
            if return_attention:
                attns.append(_pad_rows(align.dense(memory.h_bar_s.size(1)), B))  # (B, 1, S)
        out = unpack(torch.cat(outs), flat_index, B, T)  # (B, T, d)
        if return_attention:
            attns += [attns[0].new_zeros(B, 1, attns[0].size(-1))] * (T - len(attns))
        dense = torch.cat(attns, 1) if return_attention else None  # (B, T, S)
        if permuted and dense is not None:
            dense = dense[torch.argsort(order)]
        return out, dense


def _pad_rows(x: Tensor, B: int) -> Tensor:
    """Zero rows appended to ``x`` (n, ...) up to ``B`` rows."""
    if x.size(0) == B:
        return x
    return torch.cat([x, x.new_zeros(B - x.size(0), *x.shape[1:])], 0)
