"""The teacher-forced loss in fixed shapes, without host synchronisation (for CUDA graphs).

The eager fast path fits every step to its batch: it packs the real tokens (lengths read
on the host), drops finished sentences from the decoder's batch, and sizes local windows
from the longest sentence. Each of those reads a length on the host and makes the shapes
depend on the batch, so such a step cannot be captured once and replayed. Here every shape
is set by the bucket ``(B, S, T)`` that the batch was padded to, and whatever depends on the
sentence lengths is a tensor on the device:

* the encoder runs every layer over all ``S`` positions and holds a row's state once its
  sentence has ended, so ``h_bar_s`` and the final states equal the packed run's; under
  bf16-mixed an encoder without biases (the paper's) instead reads each row left-padded with
  zero inputs, which leave its zero state at exactly zero, so one cuDNN call per layer gives
  the same states (:func:`left_padded_encode`);
* the decoder runs all ``B`` rows for all ``T`` steps; steps past a sentence's end are
  computed and never read (the loss gives them weight 0, and no real step comes after them);
* local windows are clamped to the padded length (their validity still uses the real one);
* the output layer and loss run once over all ``B·T`` positions, padding ignored.

Work that does not depend on the recurrence runs once outside the loops: each layer's input
product for all steps (layer 1's embedding half in the decoder) and the score's keys of
``h_bar_s`` (``Memory.keys``). With dropout off, losses and gradients equal the eager path's
(``tests/test_engines.py``); with dropout on, the masks are drawn in another order.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

import torch
from torch import Tensor, nn
from torch.nn import functional as F

from luong_lit.nn import decoder
from luong_lit.nn.attention import Memory
from luong_lit.nn.decoder import Decoder, DecoderState, Step, StepForm, decode_all_at_once, unroll
from luong_lit.nn.encoder import Encoder, reverse_index
from luong_lit.nn.fast.lstm import RecurrentWeight, lstm_cell, summed_bias
from luong_lit.nn.fast.model import drop, fast_form, fast_output_nll, step_weights

if TYPE_CHECKING:
    from luong_lit.nn.seq2seq import Seq2Seq

#: what an encoder's read gives: ``h_bar_s`` (B, S, d) and the last ``(h, c)`` (L, B, d)
Read = tuple[Tensor, tuple[Tensor, Tensor]]


def masked_layer(x: Tensor, valid: Tensor, rnn: nn.LSTM, l: int) -> tuple[Tensor, Tensor, Tensor]:
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


def static_encode(enc: Encoder, src: Tensor, src_len: Tensor) -> Read:
    """:meth:`Encoder.forward` for a padded batch: ``h_bar_s`` (B, S, d), ``(h, c)`` (L, B, d)."""
    S = src.size(1)
    if enc.reverse_source:
        rev = reverse_index(src_len - int(enc.eos_last), S)  # (B, S)
        src = src.gather(1, rev)  # (B, S) reversed words, </s> last if eos_last, pads last
    valid = torch.arange(S, device=src.device) < src_len.unsqueeze(1)  # (B, S)
    x = drop(enc.embedding(src), enc.dropout)  # (B, S, e)
    hs, cs = [], []
    for l in range(enc.rnn.num_layers):
        if l > 0:
            x = F.dropout(x, enc.rnn.dropout, enc.rnn.training)  # nn.LSTM's own dropout
        x, h, c = masked_layer(x, valid, enc.rnn, l)  # (B, S, d), (B, d) x2
        hs.append(h)
        cs.append(c)
    return enc.original_order(x, src_len), (torch.stack(hs), torch.stack(cs))


def layerwise_lstm(
    rnn: nn.LSTM, x: Tensor, hx: tuple[Tensor, Tensor]
) -> tuple[Tensor, tuple[Tensor, Tensor]]:
    """``rnn(x, hx)`` for a batch-first, one-way ``nn.LSTM``, one layer a call (cuDNN on a GPU),
    with its dropout between layers drawn by ``F.dropout``. Returns the top layer's ``h_t``
    (B, T, d) and every layer's last ``(h, c)`` (L, B, d), as ``nn.LSTM`` does.

    ``nn.LSTM``'s own dropout runs inside cuDNN's call, with cuDNN's own random state. That
    state is seeded again from the CUDA generator, with a read back to the host, on the first
    call after the generator was set; the capture sets it (``GraphedSteps`` of
    ``luong_lit.engines.graphs`` hands the warm-ups' draws back), so that call fails in a
    graph, and its masks would not come from the generator a graph replays. ``F.dropout``
    draws from that generator, fresh masks at each replay; a layer called with dropout 0
    never touches cuDNN's state. The same layers and dropout rate; the masks are drawn in
    another order.
    """
    assert rnn.batch_first and not rnn.bidirectional and not rnn.proj_size  # stacked_lstm's
    h0, c0 = hx  # (L, B, d) each
    hs, cs = [], []
    for l in range(rnn.num_layers):
        if l > 0:
            x = F.dropout(x, rnn.dropout, rnn.training)  # (B, T, d) the lower layer's h_t
        x, h, c = lstm_layer(rnn, l, x, (h0[l : l + 1], c0[l : l + 1]))
        hs.append(h[0])
        cs.append(c[0])
    return x, (torch.stack(hs), torch.stack(cs))  # (B, T, d), (L, B, d) x2


def lstm_layer(rnn: nn.LSTM, l: int, x: Tensor, hx: tuple[Tensor, Tensor]) -> tuple[Tensor, ...]:
    """Layer ``l`` of ``rnn`` over all of ``x`` (B, T, in) from ``hx`` ((1, B, d) each), one call
    (cuDNN on a GPU), no dropout: its ``h_t`` (B, T, d) and last ``h``, ``c`` (1, B, d)."""
    weights = [getattr(rnn, f"{w}_l{l}") for w in ("weight_ih", "weight_hh")]
    if rnn.bias:
        weights += [getattr(rnn, f"{b}_l{l}") for b in ("bias_ih", "bias_hh")]
    return torch.lstm(x, hx, weights, rnn.bias, 1, 0.0, rnn.training, False, True)


def right_padded_encode(enc: Encoder, src: Tensor, src_len: Tensor) -> Read:
    """:func:`static_encode` in one whole-sequence LSTM call per layer (cuDNN on a GPU) over
    the right-padded batch, for a decoder that starts from the top layer's last ``h`` or from
    zeros (``init_state`` ``last`` or ``zero``).

    An LSTM is causal and each row's padding follows its words, so every real position's
    ``h_t`` is the packed run's whatever the padding computes, in every layer, and so is each
    layer's ``h`` at the row's last word, read from its outputs. Its cell state ``c`` there is
    no output of the call; it is returned as NaN, which ``last`` and ``zero`` never read.
    ``copy`` (every decoder layer starts from the same encoder layer's ``(h, c)``) does read
    it, and keeps the masked loop (:func:`static_encode`), which holds each row's state from
    its last word on. Dropout draws the masked loop's masks: the same shapes in the same order.
    """
    (B, S), d = src.shape, enc.rnn.hidden_size
    if enc.reverse_source:
        src = src.gather(1, reverse_index(src_len - int(enc.eos_last), S))  # (B, S)
    valid = torch.arange(S, device=src.device) < src_len.unsqueeze(1)  # (B, S)
    last = (src_len - 1).view(B, 1, 1).expand(B, 1, d)  # (B, 1, d) each row's last word
    x = drop(enc.embedding(src), enc.dropout)  # (B, S, e)
    zeros = x.new_zeros(1, B, d)  # (1, B, d)
    hs = []
    for l in range(enc.rnn.num_layers):
        if l > 0 and enc.rnn.training and enc.rnn.dropout > 0:  # nn.LSTM's own dropout
            # the call's output is laid out step-major; the mask is drawn in memory order
            x = F.dropout(x.contiguous(), enc.rnn.dropout, True)  # (B, S, d)
        x = lstm_layer(enc.rnn, l, x, (zeros, zeros))[0]  # (B, S, d)
        hs.append(x.gather(1, last).squeeze(1))  # (B, d)
    h = torch.stack(hs)  # (L, B, d)
    h_bar_s = x * valid.unsqueeze(-1)  # (B, S, d) zeros at padding
    return enc.original_order(h_bar_s, src_len), (h, torch.full_like(h, float("nan")))


def loss_step(dec: Decoder, form: StepForm, x_t: Tensor, h_tilde: Tensor, h: list[Tensor],
              c: list[Tensor], memory: Memory, t: int | Tensor
              ) -> tuple[Tensor, list[Tensor], list[Tensor], None]:  # fmt: skip
    """:func:`luong_lit.nn.decoder.decoder_step` without its ``a_t``, which the loss never
    reads: what ``engine.compile=step`` compiles."""
    h_tilde, h, c, _ = decoder.decoder_step(dec, form, x_t, h_tilde, h, c, memory, t)
    return h_tilde, h, c, None


def static_decode(
    dec: Decoder, y_in: Tensor, state: DecoderState, memory: Memory, step: Step | None = None
) -> Tensor:
    """:meth:`Decoder.forward` with input feeding over all rows and steps: (B, T, d).

    ``step``: :func:`loss_step` compiled (``engine.compile=step``); its recurrent weights'
    gradients then add up step by step in autograd, not in one product.
    """
    if not dec.feed_input:  # every step at once already; nothing depends on lengths
        stack = None
        if dec.rnn.training and dec.rnn.dropout > 0:  # cuDNN's own dropout: not in a graph
            stack = partial(layerwise_lstm, dec.rnn)
        return decode_all_at_once(dec, y_in, state, memory, False, drop, stack)[0]
    form = fast_form(step_weights(dec, defer=step is None))
    x = form.embed(dec, y_in).unbind(1)  # T x (B, 4d), all steps' products at once
    h, c = list(state.h.unbind(0)), list(state.c.unbind(0))  # L x (B, d)
    outs, _ = unroll(dec, form, x, state.h_tilde, h, c, memory, step=step or decoder.decoder_step)
    return drop(torch.stack(outs, 1), dec.output_dropout)  # (B, T, d)


def left_padded_encode(enc: Encoder, src: Tensor, src_len: Tensor) -> Read:
    """:func:`static_encode` for an encoder without biases, one whole-sequence LSTM call per
    layer (cuDNN on a GPU) instead of a step loop.

    Each row is read left-padded: the padding comes first, with zero input vectors. Without
    biases a zero input leaves the zero initial state at exactly zero (every gate is 1/2 and
    the candidate 0), so the state after a row's last word, the final state of the call, is
    the packed run's. The outputs are moved back to right-padded positions.
    """
    (B, S), d = src.shape, enc.rnn.hidden_size
    pos = torch.arange(S, device=src.device).unsqueeze(0)  # (1, S)
    order = pos.expand(B, S)  # (B, S) reading slot j holds source slot order[j]
    if enc.reverse_source:
        order = reverse_index(src_len - int(enc.eos_last), S)  # (B, S)
    shift = S - src_len.unsqueeze(1)  # (B, 1) padding slots in front of each row
    real = (pos >= shift).unsqueeze(-1)  # (B, S, 1) real words once left-padded
    left = order.gather(1, (pos - shift).clamp(min=0))  # (B, S) source slot of each left slot
    x = drop(enc.embedding(src.gather(1, left)) * real, enc.dropout)  # (B, S, e), zero at the front
    zeros = x.new_zeros(enc.rnn.num_layers, src.size(0), d)  # (L, B, d)
    x, (h, c) = layerwise_lstm(enc.rnn, x, (zeros, zeros))  # (B, S, d), (L, B, d) x2
    back = (order + shift).clamp(max=S - 1)  # (B, S) source slot s reads left slot order[s]+shift
    valid = (pos < src_len.unsqueeze(1)).unsqueeze(-1)  # (B, S, 1)
    h_bar_s = x.gather(1, back.unsqueeze(-1).expand_as(x)) * valid  # (B, S, d), original order
    return h_bar_s, (h, c)


STATIC_ENCODERS = ("auto", "masked", "left_padded", "right_padded")
#: the decoder starts that read no encoder cell state (:func:`right_padded_encode`)
NO_CELL = ("last", "zero")


def check_static_encoder(encoder: str, net: Seq2Seq) -> None:
    """A ``ValueError`` for an unknown ``encoder``, ``left_padded`` with biases, or
    ``right_padded`` for a decoder that starts from the encoder's cell states."""
    if encoder not in STATIC_ENCODERS:
        raise ValueError(f"static encoder {encoder!r} is not one of {STATIC_ENCODERS}")
    if encoder == "left_padded" and net.encoder.rnn.bias:
        raise ValueError("the left-padded encoder is exact only for an encoder without biases")
    if encoder == "right_padded" and net.init_state not in NO_CELL:
        raise ValueError(
            f"the right-padded encoder is exact only for init_state last or zero, not "
            f"{net.init_state} (which starts from the encoder's cell states)"
        )


def chosen_encoder(encoder: str, net: Seq2Seq, src: Tensor) -> str:
    """How :func:`static_memory` encodes: ``encoder`` unless it is ``auto``.

    ``auto`` reads right-padded for a decoder that starts from ``last`` or ``zero``
    (:func:`right_padded_encode`: the masked loop's states in float64 on a CPU; not yet
    compared on a GPU, where cuDNN may run in TF32); else left-padded for an encoder
    without biases under CUDA bf16 autocast (bf16-mixed), where it was checked against eager
    autograd on a GPU (in fp32 the replayed loss differed from eager by 2.4e-5 relative there,
    TF32 in the fixed-length cuDNN call the likely cause, not confirmed); else the masked loop.
    """
    check_static_encoder(encoder, net)
    if encoder != "auto":
        return encoder
    if net.init_state in NO_CELL:
        return "right_padded"
    autocast = src.is_cuda and torch.is_autocast_enabled("cuda")
    autocast = autocast and torch.get_autocast_dtype("cuda") == torch.bfloat16
    return "left_padded" if not net.encoder.rnn.bias and autocast else "masked"


def static_memory(
    net: Seq2Seq, src: Tensor, src_len: Tensor, encoder: str = "auto"
) -> tuple[Memory, DecoderState]:
    """:meth:`Seq2Seq.encode <luong_lit.nn.Seq2Seq.encode>` in fixed shapes.

    ``encoder``: ``masked`` runs the masked step loop (:func:`static_encode`),
    ``left_padded`` and ``right_padded`` one whole-sequence call per layer
    (:func:`left_padded_encode`, :func:`right_padded_encode`), ``auto`` chooses
    (:func:`chosen_encoder`).
    """
    reads = {"masked": static_encode, "left_padded": left_padded_encode,
             "right_padded": right_padded_encode}  # fmt: skip
    return net.encode(src, src_len, read=reads[chosen_encoder(encoder, net, src)])


def static_nll(
    net: Seq2Seq,
    src: Tensor,
    src_len: Tensor,
    tgt_in: Tensor,
    tgt_out: Tensor,
    label_smoothing: float = 0.0,
    encoder: str = "auto",
    step: Step | None = None,
) -> tuple[Tensor, Tensor]:
    """Summed token NLL (Eq. 6) of a padded batch and its token count, both device tensors.

    The same sums as :func:`luong_lit.nn.loss.token_nll`; no value is read on the host.
    ``encoder``: see :func:`static_memory`; ``step``: see :func:`static_decode`.
    """
    memory, state = static_memory(net, src, src_len, encoder)
    h_tilde = static_decode(net.decoder, tgt_in, state, memory, step)  # (B, T, d)
    targets = tgt_out.reshape(-1)  # (B*T,)
    h_tilde = h_tilde.reshape(-1, h_tilde.size(-1))  # (B*T, d)
    nll = fast_output_nll(net, h_tilde, targets, label_smoothing, ignore_index=net.pad_id)
    return nll, (targets != net.pad_id).sum()
