"""The teacher-forced loss in fixed shapes, without host synchronisation (for CUDA graphs).

The eager fast path fits every step to its batch: it packs the real tokens (lengths read
on the host), drops finished sentences from the decoder's batch, and sizes local windows
from the longest sentence. Each of those reads a length on the host and makes the shapes
depend on the batch, so such a step cannot be captured once and replayed. Here every shape
is set by the bucket ``(B, S, T)`` that the batch was padded to, and whatever depends on the
sentence lengths is a tensor on the device:

* the encoder runs every layer over all ``S`` positions and holds a row's state once its
  sentence has ended, so ``h_bar_s`` and the final states equal the packed run's;
* the decoder runs all ``B`` rows for all ``T`` steps; steps past a sentence's end are
  computed and never read (the loss gives them weight 0, and no real step comes after them);
* local windows are clamped to the padded length (their validity still uses the real one);
* the output layer and loss run once over all ``B·T`` positions, padding ignored.

Work that does not depend on the recurrence runs once outside the loops: each layer's input
product for all steps (layer 1's embedding half in the decoder) and the score's keys of
``h_bar_s`` (``Memory.keys``). With dropout off, losses and gradients equal the eager path's
(``tests/test_static.py``); with dropout on, the masks are drawn in another order.
"""

from __future__ import annotations

import torch
from torch import Tensor
from torch.nn import functional as F

from luong_lit.nn.attention import Memory
from luong_lit.nn.decoder import Decoder, DecoderState
from luong_lit.nn.encoder import Encoder, reverse_index
from luong_lit.nn.fast.lstm import RecurrentWeight, lstm_cell, summed_bias
from luong_lit.nn.fast.model import cell_stack, layer_weights, project_embeddings
from luong_lit.nn.seq2seq import append_eos


def masked_layer(x: Tensor, valid: Tensor, rnn, l: int) -> tuple[Tensor, Tensor, Tensor]:
    """Layer ``l`` of ``rnn`` over a right-padded batch ``x`` (B, S, in) from a zero state.

    ``valid`` (B, S) marks real positions. Returns the outputs (B, S, d), zeros at padding,
    and the state at each row's last real position, ``h`` and ``c`` (B, d).
    """
    x_proj = F.linear(x, getattr(rnn, f"weight_ih_l{l}"), summed_bias(rnn, l))  # (B, S, 4d)
    W_hh = RecurrentWeight(getattr(rnn, f"weight_hh_l{l}").t())  # (d, 4d)
    h = c = x.new_zeros(x.size(0), rnn.hidden_size)  # (B, d)
    outs = []
    for x_t, m in zip(x_proj.unbind(1), valid.unsqueeze(-1).unbind(1)):  # (B, 4d), (B, 1)
        h_new, c_new = lstm_cell(W_hh.addmm(x_t, h), c)  # (B, d) x2
        h, c = torch.where(m, h_new, h), torch.where(m, c_new, c)  # held after the end
        outs.append(h_new * m)  # (B, d)
    return torch.stack(outs, 1), h, c


def static_encode(enc: Encoder, src: Tensor, src_len: Tensor) -> tuple[Tensor, tuple]:
    """:meth:`Encoder.forward` for a padded batch: ``h_bar_s`` (B, S, d), ``(h, c)`` (L, B, d)."""
    S = src.size(1)
    if enc.reverse_source:
        rev = reverse_index(src_len - int(enc.eos_last), S)  # (B, S)
        src = src.gather(1, rev)  # (B, S) reversed words, </s> last if eos_last, pads last
    valid = torch.arange(S, device=src.device) < src_len.unsqueeze(1)  # (B, S)
    x = enc.dropout(enc.embedding(src))  # (B, S, e)
    hs, cs = [], []
    for l in range(enc.rnn.num_layers):
        if l > 0:
            x = F.dropout(x, enc.rnn.dropout, enc.rnn.training)  # nn.LSTM's own dropout
        x, h, c = masked_layer(x, valid, enc.rnn, l)  # (B, S, d), (B, d) x2
        hs.append(h)
        cs.append(c)
    return enc._original_order(x, src_len), (torch.stack(hs), torch.stack(cs))


def static_decode(dec: Decoder, y_in: Tensor, state: DecoderState, memory: Memory) -> Tensor:
    """:meth:`Decoder.forward` with input feeding over all rows and steps: (B, T, d)."""
    if not dec.feed_input:  # every step at once already; nothing depends on lengths
        return Decoder.forward(dec, y_in, state, memory)[0]
    weights = [(RecurrentWeight(W), b) for W, b in layer_weights(dec)]
    x0 = project_embeddings(dec, dec.dropout(dec.embedding(y_in)))  # (B, T, 4d), all steps
    h, c, h_tilde = list(state.h.unbind(0)), list(state.c.unbind(0)), state.h_tilde
    outs = []
    for t, x_t in enumerate(x0.unbind(1)):  # (B, 4d)
        h, c = cell_stack(dec, x_t, h_tilde, h, c, weights)  # L x (B, d)
        h_tilde, _ = dec.attend(h[-1].unsqueeze(1), memory, t)  # (B, 1, d) Eq. 5
        h_tilde = h_tilde.squeeze(1)  # (B, d)
        outs.append(h_tilde)
    return dec.output_dropout(torch.stack(outs, 1))  # (B, T, d)


def static_memory(net, src: Tensor, src_len: Tensor) -> tuple[Memory, DecoderState]:
    """:meth:`Seq2Seq.encode <luong_lit.nn.Seq2Seq.encode>` in fixed shapes."""
    if net.src_eos:
        src, src_len = append_eos(src, src_len, net.eos_id, net.pad_id)  # (B, S+1), (B,)
    h_bar_s, (h, c) = static_encode(net.encoder, src, src_len)  # (B, S, d), (L, B, d) x2
    return net.initial(h_bar_s, h, c, src_len)


def static_nll(
    net, src: Tensor, src_len: Tensor, tgt_in: Tensor, tgt_out: Tensor, label_smoothing=0.0
) -> tuple[Tensor, Tensor]:
    """Summed token NLL (Eq. 6) of a padded batch and its token count, both device tensors.

    The same sums as :func:`luong_lit.nn.loss.token_nll`; no value is read on the host.
    """
    memory, state = static_memory(net, src, src_len)
    h_tilde = static_decode(net.decoder, tgt_in, state, memory)  # (B, T, d)
    targets = tgt_out.reshape(-1)  # (B*T,)
    nll = net.output_nll(
        h_tilde.reshape(-1, h_tilde.size(-1)), targets, label_smoothing, ignore_index=net.pad_id
    )
    return nll, (targets != net.pad_id).sum()
