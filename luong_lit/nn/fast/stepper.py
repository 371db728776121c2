"""A trained model wrapped for decoding: each step's constants computed once.

:class:`FastStepper` offers the decoding interface of :class:`~luong_lit.nn.Seq2Seq`
(``encode``, ``step``, ``logits``). The ``fast`` engine builds it from the model's current
weights, for one decoding run (:meth:`luong_lit.engines.FastEngine.for_decoding`), and it
computes without autograd:

* the encoder over the real tokens only (:func:`~.model.fast_encode`);
* layer 1's product with every target word's embedding, as a (V, 4d) table: each step looks
  its rows up instead of multiplying;
* each layer's input and recurrent weights joined into one matrix;
* the output layer through :func:`~.projection.project_rows` (oneDNN or column blocks);
* optionally 8-bit copies of ``W_s`` (``int8="output"``) or of every decoder product
  (``int8="all"``, :mod:`.quantize`).

The model must be in eval mode (dropout off). Its results equal the model's own ``step``
(``tests/test_engines.py``), except with ``int8``, which is approximate.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from luong_lit.nn.attention import Alignment, Memory
from luong_lit.nn.decoder import Decoder, DecoderState, decoder_step
from luong_lit.nn.fast.lstm import RecurrentWeight
from luong_lit.nn.fast.model import (
    fast_form,
    fast_memory,
    layer_weights,
    project_embeddings,
)
from luong_lit.nn.fast.projection import project_rows
from luong_lit.nn.fast.quantize import PARTS, Int8Linear, Int8Recurrent
from luong_lit.nn.interface import OneModel
from luong_lit.nn.seq2seq import Seq2Seq


class FastStepper(nn.Module, OneModel):
    """``encode``/``step``/``logits`` of a :class:`~luong_lit.nn.Seq2Seq` in eval mode: a
    :class:`~luong_lit.nn.interface.DecodeModel`, with the model's own facts."""

    def __init__(self, net: Seq2Seq, int8: str | None = None) -> None:
        super().__init__()
        if int8 is not None and int8 not in PARTS:
            raise ValueError(f"int8 parts must be one of {PARTS}, got {int8!r}")
        self.net: Seq2Seq = net
        self.facts = net.facts
        dec: Decoder = net.decoder
        with torch.no_grad():
            self.table = project_embeddings(dec, dec.embedding.weight)  # (V, 4d)
            self.int8_output = Int8Linear(dec.W_s.weight, dec.W_s.bias) if int8 else None
            if int8 == "all":
                W_c = None if dec.W_c is None else Int8Linear(dec.W_c.weight, dec.W_c.bias)
                self.form = fast_form(
                    [(Int8Recurrent(W), b) for W, b in layer_weights(dec)], W_c, self.looked_up
                )
            else:
                weights = [(RecurrentWeight(W), b) for W, b in layer_weights(dec)]
                self.form = fast_form(weights, embed=self.looked_up)

    def looked_up(self, dec: Decoder, y: Tensor) -> Tensor:
        """Layer 1's product with ``emb(y_{t-1})``, a row of :attr:`table`: (B,) -> (B, 4d)."""
        return self.table.index_select(0, y)

    def encode(self, src: Tensor, src_len: Tensor) -> tuple[Memory, DecoderState]:
        return fast_memory(self.net, src, src_len)  # the ragged encoder on a CPU

    def step(
        self, y_prev: Tensor, state: DecoderState, memory: Memory, t: int | Tensor
    ) -> tuple[Tensor, DecoderState, Alignment | None]:
        """The model's step (logits (B, V), state, ``a_t``) from the precomputed constants."""
        x_t = self.form.embed(self.net.decoder, y_prev)  # (B, 4d) layer 1's product, looked up
        h, c = list(state.h), list(state.c)  # L x (B, d) each
        h_tilde, h, c, align = decoder_step(
            self.net.decoder, self.form, x_t, state.h_tilde, h, c, memory, t
        )  # (B, d)
        return self.logits(h_tilde), DecoderState(torch.stack(h), torch.stack(c), h_tilde), align

    def logits(self, h_tilde: Tensor) -> Tensor:
        """``W_s h_tilde_t`` (Eq. 6): (B, d) -> (B, V)."""
        if self.int8_output is not None:
            return self.int8_output(h_tilde)
        W_s = self.net.decoder.W_s
        return project_rows(h_tilde, W_s.weight, W_s.bias)
