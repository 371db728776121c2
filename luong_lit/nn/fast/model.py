"""The encoder and decoder of :mod:`luong_lit.nn`, computed faster with the same parameters.

These functions read the parameters of a :class:`~luong_lit.nn.Seq2Seq` and compute its
teacher-forced pass. :func:`fast_encode` runs the LSTM over the real tokens of a ragged batch on
the CPU (:func:`~.lstm.ragged_lstm`) and cuDNN on a GPU. :func:`fast_decode` unrolls the
input-feeding decoder over the rows still running: rows are sorted by target length, so at step
``t`` only the first ``n_t`` rows are computed, as a packed sequence would do; layer 1's product
with the embeddings runs once for all steps, and the recurrent weights' gradients are summed once
over all steps (:class:`~.lstm.RecurrentWeight`). Dropout masks are drawn by
:func:`~.dropout.dropout`, with the probabilities of the model's own dropout modules.

The loop is the decoder's own, :func:`luong_lit.nn.decoder.unroll`, and so is each step,
:func:`luong_lit.nn.decoder.decoder_step`, in the fast form (:func:`fast_form`): ``y_{t-1}``
embedded as layer 1's product with it, every layer's cell as one product (:func:`fused_cells`)
and these masks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch
from torch import Tensor, nn
from torch.nn import functional as F

from luong_lit.nn.attention import Memory
from luong_lit.nn.decoder import (
    Decoder,
    DecoderState,
    Embed,
    Linear,
    StepForm,
    decode_all_at_once,
    unroll,
)
from luong_lit.nn.encoder import Encoder, reverse_index
from luong_lit.nn.fast.dropout import dropout
from luong_lit.nn.fast.loss import linear_cross_entropy
from luong_lit.nn.fast.lstm import (
    RecurrentWeight,
    lstm_cell,
    pack_ids,
    ragged_lstm,
    summed_bias,
    unpack,
)

if TYPE_CHECKING:
    from luong_lit.nn.seq2seq import Seq2Seq

#: each layer's ``(W, b)`` of its one product a step (a RecurrentWeight, or an 8-bit copy)
Weights = list[tuple[Any, Tensor | None]]


def drop(x: Tensor, module: nn.Dropout) -> Tensor:
    """``module(x)`` with the mask drawn by :func:`~.dropout.dropout` (same ``p``, same mode)."""
    return dropout(x, module.p, module.training)


def fast_encode(enc: Encoder, src: Tensor, src_len: Tensor) -> tuple[Tensor, tuple[Tensor, Tensor]]:
    """:meth:`Encoder.forward` over the real tokens only: ``h_bar_s`` (B, S, d), ``(h, c)``."""
    S = src.size(1)
    if enc.reverse_source:
        rev = reverse_index(src_len - int(enc.eos_last), S)  # (B, S), its own inverse
        src = src.gather(1, rev)  # (B, S) reversed words, then </s> if eos_last, pads last
    ids, flat_index = pack_ids(src, src_len)  # real tokens only, time-major
    packed = ids._replace(data=drop(enc.embedding(ids.data), enc.dropout))  # (N, e)
    if src.is_cuda:
        out, (h, c) = enc.rnn(packed)  # cuDNN
    else:
        out, (h, c) = ragged_lstm(packed, enc.rnn)  # the same result, faster on CPU
    h_bar_s = unpack(out.data, flat_index, src.size(0), S)  # (B, S, d), zeros at padding
    return enc.original_order(h_bar_s, src_len), (h, c)


def fast_memory(net: Seq2Seq, src: Tensor, src_len: Tensor) -> tuple[Memory, DecoderState]:
    """:meth:`Seq2Seq.encode <luong_lit.nn.Seq2Seq.encode>` with :func:`fast_encode`."""
    return net.encode(src, src_len, read=fast_encode)


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
    W_ih: Tensor = getattr(dec.rnn, "weight_ih_l0")  # (4d, e [+ d])  # noqa: B009
    return F.linear(x, W_ih[:, : dec.embed_size], summed_bias(dec.rnn, 0))


def embed_proj(dec: Decoder, y: Tensor) -> Tensor:
    """Layer-1 input projection of the (dropped-out) embeddings: (...,) ids -> (..., 4d)."""
    return project_embeddings(dec, drop(dec.embedding(y), dec.dropout))  # (..., 4d)


def fused_cells(dec: Decoder, weights: Weights, x0: Tensor, fed: Tensor | None, h: list[Tensor],
                c: list[Tensor]) -> tuple[Tensor, list[Tensor], list[Tensor]]:  # fmt: skip
    """:data:`~luong_lit.nn.decoder.Cells` of every LSTM layer as one product per layer:
    ``W [x_t; h_{t-1}]`` by :func:`layer_weights`, layer 1's ``x0`` (n, 4d) the product with
    ``emb(y_{t-1})`` already made (:func:`embed_proj`) and ``fed`` (n, d) the rest of its input.

    States are per-layer lists: indexing a stacked (L, B, d) tensor at every step would cost a
    full-size zero fill per index in the backward pass.
    """
    hs: list[Tensor] = []
    cs: list[Tensor] = []
    for layer, (W, b) in enumerate(weights):
        h_prev = h[layer]  # (n, d)
        if layer == 0:
            rec = h_prev if fed is None else torch.cat([fed, h_prev], 1)  # (n, d|2d)
            gates = W.addmm(x0, rec)  # (n, 4d)
        else:
            rec = torch.cat([drop(hs[-1], dec.dropout), h_prev], 1)  # (n, 2d)
            gates = W.addmm(b, rec)  # (n, 4d)
        h_new, c_new = lstm_cell(gates, c[layer])
        hs.append(h_new)
        cs.append(c_new)
    return hs[-1].unsqueeze(1), hs, cs  # (n, 1, d) h_t, L x (n, d) x2


def fast_form(weights: Weights, W_c: Linear | None = None, embed: Embed | None = None) -> StepForm:
    """The step's fast form: :func:`fused_cells` over ``weights`` (per layer ``(W, b)``,
    :func:`step_weights`), masks drawn by :func:`drop`, ``W_c`` (an 8-bit copy) or
    ``dec.W_c``, and ``y_{t-1}`` embedded as layer 1's product with it (:func:`embed_proj`,
    unless ``embed`` says otherwise)."""
    return StepForm(fused_cells, weights, drop, W_c, embed or embed_proj)


def step_weights(dec: Decoder, defer: bool = True) -> list[tuple[RecurrentWeight, Tensor | None]]:
    """:func:`layer_weights` as :class:`~.lstm.RecurrentWeight` products for one pass."""
    return [(RecurrentWeight(W, defer), b) for W, b in layer_weights(dec)]


def fast_decode(
    dec: Decoder, y_in: Tensor, state: DecoderState, memory: Memory,
    return_attention: bool = False,
) -> tuple[Tensor, Tensor | None]:  # fmt: skip
    """:meth:`Decoder.forward`: ``h_tilde`` (B, T, d), zeros at padded positions, and with
    ``return_attention`` the dense ``a_t`` (B, T, S)."""
    if not dec.feed_input:
        return decode_all_at_once(dec, y_in, state, memory, return_attention, drop)
    h_tilde, dense = _unrolled(dec, y_in, state, memory, return_attention)
    return drop(h_tilde, dec.output_dropout), dense


def _sorted(
    dec: Decoder, y_in: Tensor, state: DecoderState, memory: Memory
) -> tuple[Tensor, Tensor, DecoderState, Memory, Tensor | None]:
    """Rows by target length, longest first: ``y_in, lengths, state, memory, order``.

    ``order`` is None when the rows are in that order already."""
    B = y_in.size(0)
    real = y_in.ne(dec.embedding.padding_idx or 0)  # (B, T)
    lengths = real.sum(1).clamp_min(1)  # (B,) steps per row
    order = torch.argsort(lengths, descending=True, stable=True)  # (B,)
    if not bool((order != torch.arange(B, device=order.device)).any()):
        return y_in, lengths, state, memory, None
    return y_in[order], lengths[order], state.index_select(order), memory.index_select(order), order


def _unrolled(
    dec: Decoder, y_in: Tensor, state: DecoderState, memory: Memory, return_attention: bool
) -> tuple[Tensor, Tensor | None]:
    """The input-feeding decoder unrolled; sentences that have ended drop out of the batch."""
    B, T = y_in.shape
    y_in, lengths, state, memory, order = _sorted(dec, y_in, state, memory)
    ids, flat_index = pack_ids(y_in, lengths, sorted_rows=True)  # real tokens, time-major
    if order is not None:  # unpack straight into the original row order
        flat_index = order[flat_index // T] * T + flat_index % T  # (N,)
    running = ids.batch_sizes.tolist()  # n_t: rows still running at step t
    form = fast_form(step_weights(dec))
    x_proj = torch.split(form.embed(dec, ids.data), running)  # T x (n_t, 4d); backward: one cat
    h, c = list(state.h.unbind(0)), list(state.c.unbind(0))  # L x (B, d)
    outs, attns = unroll(dec, form, x_proj, state.h_tilde, h, c, memory, return_attention)
    attns = [_pad_rows(a, B) for a in attns]  # each (B, 1, S)
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


def fast_forward(
    net: Seq2Seq, src: Tensor, src_len: Tensor, tgt_in: Tensor, return_attention: bool = False
) -> tuple[Tensor, Tensor | None]:
    """:meth:`Seq2Seq.forward <luong_lit.nn.Seq2Seq.forward>`: ``h_tilde`` (B, T, d), ``a_t``."""
    memory, state = fast_memory(net, src, src_len)
    return fast_decode(net.decoder, tgt_in, state, memory, return_attention)


def fast_output_nll(
    net: Seq2Seq,
    h_tilde: Tensor,
    targets: Tensor,
    label_smoothing: float = 0.0,
    ignore_index: int = -100,
) -> Tensor:
    """:meth:`Seq2Seq.output_nll <luong_lit.nn.Seq2Seq.output_nll>` (Eq. 6), fused and chunked
    (:mod:`.loss`)."""
    W_s = net.decoder.W_s
    return linear_cross_entropy(
        h_tilde, W_s.weight, W_s.bias, targets, label_smoothing=label_smoothing,
        ignore_index=ignore_index,
    )  # fmt: skip


def fast_nll(net: Seq2Seq, batch: Any, label_smoothing: float = 0.0) -> tuple[Tensor, int]:
    """:func:`luong_lit.nn.loss.token_nll` computed by the functions above."""
    h_tilde, _ = fast_forward(net, batch.src, batch.src_len, batch.tgt_in)  # (B, T, d)
    mask = batch.tgt_out != net.pad_id  # (B, T)
    nll = fast_output_nll(net, h_tilde[mask], batch.tgt_out[mask], label_smoothing)  # Eq. 6
    return nll, int(mask.sum())
