"""Stacked LSTM decoder with attention and input feeding (paper §3 and §3.3), in plain form.

At step ``t`` the decoder reads ``y_{t-1}`` (and, with input feeding, ``h_tilde_{t-1}``),
computes the top-layer state ``h_t``, attends to get the context ``c_t``, and forms the
attentional vector ``h_tilde_t = tanh(W_c [c_t; h_t])`` (Eq. 5, context first: see
docs/paper_notes.md §0). ``p(y_t | y_<t, x) = softmax(W_s h_tilde_t)`` (Eq. 6). Without
attention the prediction uses ``h_t`` directly (Eq. 2).

Without input feeding ``nn.LSTM`` reads the whole target at once and attention runs for all
``T`` queries in one call; with input feeding layer 1 needs ``h_tilde_{t-1}``, so the
teacher-forced pass is a loop over :meth:`Decoder.step`. The ``fast`` engine computes the
same with the same parameters, faster (:mod:`luong_lit.nn.fast`).
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import Tensor, nn

from luong_lit.nn.attention import Alignment, Attention, Memory
from luong_lit.nn.encoder import stacked_lstm
from luong_lit.nn.options import Architecture, Regularisation, Sizes


class DecoderState(NamedTuple):
    """Recurrent state carried between decoder steps (reordered by beam search)."""

    h: Tensor  # (L, B, d)
    c: Tensor  # (L, B, d)
    h_tilde: Tensor  # (B, d) previous attentional vector, zeros before step 1

    def index_select(self, idx: Tensor) -> DecoderState:
        return DecoderState(
            self.h.index_select(1, idx),
            self.c.index_select(1, idx),
            self.h_tilde.index_select(0, idx),
        )


class Decoder(nn.Module):
    """Target embedding, stacked LSTM, attention, attentional layer ``W_c`` and softmax ``W_s``.

    Dropout (docs/paper_notes.md §7) is applied to the input of every LSTM layer: to the
    embedding, to ``h_tilde_{t-1}`` when it is fed, and to the lower layer's ``h_t``; never to
    the recurrent state, the attention weights, or ``h_tilde_t`` before the softmax.
    ``hidden_dropout`` optionally drops ``[c_t; h_t]`` before ``W_c`` (Joey NMT's placement).
    ``output_dropout`` optionally drops ``h_tilde_t`` before ``W_s`` in training (Zaremba et
    al. 2014 and OpenNMT-py's placement; the fed-back ``h_tilde_t`` keeps its own input
    dropout). ``tie_output`` shares the target embedding matrix with ``W_s`` (Press & Wolf, 2017).
    """

    def __init__(
        self,
        *,
        vocab_size: int,
        pad_id: int,
        sizes: Sizes,
        architecture: Architecture,
        regularisation: Regularisation,
        attention: Attention | None,
    ) -> None:
        """The target side of the options: ``feed_input``, ``tie_output`` and ``bias`` of
        ``architecture``, every probability of ``regularisation``; ``attention`` is built."""
        super().__init__()
        e, d, bias = sizes.embed_size, sizes.hidden_size, architecture.bias
        self.attention, self.feed_input = attention, architecture.feed_input
        self.embed_size, self.hidden_size, self.num_layers = e, d, sizes.num_layers
        self.embedding = nn.Embedding(vocab_size, e, padding_idx=pad_id)
        self.dropout = nn.Dropout(regularisation.dropout)
        self.hidden_dropout = nn.Dropout(regularisation.hidden_dropout)
        self.output_dropout = nn.Dropout(regularisation.output_dropout)
        in_size = e + (d if self.feed_input else 0)  # [emb(y_{t-1}); h_tilde_{t-1}]
        self.rnn = stacked_lstm(
            in_size, sizes=sizes, architecture=architecture, regularisation=regularisation
        )
        self.W_c = nn.Linear(2 * d, d, bias=bias) if attention is not None else None
        self.W_s = nn.Linear(d, vocab_size, bias=bias)
        if architecture.tie_output:  # one (V, d) matrix embeds y_{t-1} and scores y_t (e == d)
            self.W_s.weight = self.embedding.weight

    def attend(self, h_t: Tensor, memory: Memory, step: int) -> tuple[Tensor, Alignment | None]:
        """``h_tilde_t = tanh(W_c [c_t; h_t])`` (Eq. 5) for queries ``h_t`` (B, T, d)."""
        if self.attention is None:
            return h_t, None
        c_t, align = self.attention(h_t, memory, step)  # (B, T, d)
        c_h = self.hidden_dropout(torch.cat([c_t, h_t], -1))  # (B, T, 2d)
        return torch.tanh(self.W_c(c_h)), align  # (B, T, d)

    def step(
        self, y_prev: Tensor, state: DecoderState, memory: Memory, t: int
    ) -> tuple[Tensor, DecoderState, Alignment | None]:
        """One decoder step from ``y_{t-1}`` (B,): returns ``h_tilde_t`` (B, d), state, alignment.

        With input feeding layer 1 reads ``[emb(y_{t-1}); h_tilde_{t-1}]`` (§3.3).
        """
        x_t = self.dropout(self.embedding(y_prev))  # (B, e)
        if self.feed_input:
            x_t = torch.cat([x_t, self.dropout(state.h_tilde)], -1)  # (B, e + d)
        h_t, (h, c) = self.rnn(x_t.unsqueeze(1), (state.h, state.c))  # (B, 1, d), (L, B, d) x2
        h_tilde, align = self.attend(h_t, memory, t)  # (B, 1, d)
        h_tilde = h_tilde.squeeze(1)  # (B, d)
        return h_tilde, DecoderState(h, c, h_tilde), align

    def forward(
        self, y_in: Tensor, state: DecoderState, memory: Memory, return_attention: bool = False
    ) -> tuple[Tensor, Tensor | None]:
        """Teacher-forced decoding of ``y_in`` (B, T) (``<s> y_1 ... y_{T-1}``).

        Returns ``h_tilde`` (B, T, d) for every step (after ``output_dropout``, the input of
        ``W_s``) and, if asked, the dense attention weights (B, T, S). Values at padded
        target positions are left unspecified: the loss never reads them.
        """
        S = memory.h_bar_s.size(1)
        if not self.feed_input:  # every step at once (the paper's models without feeding)
            h_t, _ = self.rnn(self.dropout(self.embedding(y_in)), (state.h, state.c))  # (B, T, d)
            h_tilde, align = self.attend(h_t, memory, 0)  # (B, T, d)
            dense = align.dense(S) if (return_attention and align is not None) else None
            return self.output_dropout(h_tilde), dense
        outs, attns = [], []
        for t in range(y_in.size(1)):
            h_tilde_t, state, align = self.step(y_in[:, t], state, memory, t)  # (B, d)
            outs.append(h_tilde_t)
            if return_attention:
                attns.append(align.dense(S))  # (B, 1, S)
        dense = torch.cat(attns, 1) if return_attention else None  # (B, T, S)
        return self.output_dropout(torch.stack(outs, 1)), dense  # (B, T, d)
