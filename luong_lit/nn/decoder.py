"""Stacked LSTM decoder with attention and input feeding (paper §3 and §3.3): its one step.

At step ``t`` the decoder reads ``y_{t-1}`` (and, with input feeding, ``h_tilde_{t-1}``),
computes the top-layer state ``h_t``, attends to get the context ``c_t``, and forms the
attentional vector ``h_tilde_t = tanh(W_c [c_t; h_t])`` (Eq. 5, context first: see
docs/paper_notes.md §0). ``p(y_t | y_<t, x) = softmax(W_s h_tilde_t)`` (Eq. 6). Without
attention the prediction uses ``h_t`` directly (Eq. 2).

That step is written once, :func:`decoder_step`, and so is the teacher-forced loop over it,
:func:`unroll`. How ``y_{t-1}`` is embedded, how the LSTM cells are computed and how dropout
masks are drawn is a :class:`StepForm` handed to them: here the plain form (:data:`REFERENCE`,
``nn.Embedding``, ``nn.LSTM`` and ``nn.Dropout``); the ``fast`` engine's forms (fused cells
unrolled over the rows still running, fixed shapes for CUDA graphs, a decode-time stepper:
:mod:`luong_lit.nn.fast`) hand it theirs, with the same parameters. Without input feeding no
step depends on the last one: :func:`decode_all_at_once` reads the whole target in one LSTM
call and attends for all ``T`` queries at once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

import torch
from torch import Tensor, nn

from luong_lit.nn.attention import Alignment, Attention, Memory, StepIndex
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


#: How a dropout mask is drawn: ``drop(x, module)`` is ``module(x)`` with the module's ``p``.
Drop = Callable[[Tensor, nn.Dropout], Tensor]
#: How the LSTM stack advances one step (§3): ``cells(dec, weights, x_t, fed, h, c)`` reads
#: ``x_t`` (``y_{t-1}`` embedded as the form embeds it) and ``fed`` (the dropped-out
#: ``h_tilde_{t-1}``, None without input feeding), and returns the top layer's ``h_t``
#: (B, 1, d) and every layer's new ``h`` and ``c``, held as the form holds them.
Cells = Callable[..., tuple[Tensor, Any, Any]]
#: A linear product ``x -> x W^T + b`` (``nn.Linear``, or an 8-bit copy of one).
Linear = Callable[[Tensor], Tensor]
#: How ``y_{t-1}`` (ids, any shape) is embedded for the step's cells: ``embed(dec, y)``.
Embed = Callable[["Decoder", Tensor], Tensor]
#: One step, :func:`decoder_step`'s signature and result (``a_t`` may be None).
Step = Callable[..., tuple[Tensor, Any, Any, Any]]


def module_drop(x: Tensor, module: nn.Dropout) -> Tensor:
    """The module's own dropout (``F.dropout``)."""
    dropped: Tensor = module(x)
    return dropped


def module_embed(dec: Decoder, y: Tensor) -> Tensor:
    """``emb(y_{t-1})`` with the input dropout of layer 1: (...,) ids -> (..., e)."""
    x: Tensor = dec.dropout(dec.embedding(y))  # (..., e)
    return x


def module_cells(dec: Decoder, weights: None, x_t: Tensor, fed: Tensor | None, h: Tensor,
                 c: Tensor) -> tuple[Tensor, Tensor, Tensor]:  # fmt: skip
    """:data:`Cells` of ``nn.LSTM``: layer 1 reads ``[emb(y_{t-1}); h_tilde_{t-1}]`` (§3.3),
    ``x_t`` (B, e) the dropped-out embedding; ``h``, ``c`` (L, B, d) (``weights``: unused)."""
    x = x_t if fed is None else torch.cat([x_t, fed], -1)  # (B, e [+ d])
    h_t, (h, c) = dec.rnn(x.unsqueeze(1), (h, c))  # (B, 1, d), (L, B, d) x2
    return h_t, h, c


class StepForm(NamedTuple):
    """How :func:`decoder_step` is computed, chosen once per batch (or per decoding run)."""

    cells: Cells  # the LSTM stack's step
    weights: Any  # what ``cells`` multiplies by (None: the module's own parameters)
    drop: Drop  # how dropout masks are drawn
    W_c: Linear | None  # Eq. 5's product in place of ``dec.W_c`` (an 8-bit copy)
    embed: Embed  # how y_{t-1} becomes the x_t that ``cells`` reads


#: The plain form: ``nn.Embedding``, ``nn.LSTM`` and ``nn.Dropout``, to be read beside the paper.
REFERENCE = StepForm(module_cells, None, module_drop, None, module_embed)


def attentional(dec: Decoder, h_t: Tensor, memory: Memory, t: StepIndex, drop: Drop = module_drop,
                W_c: Linear | None = None) -> tuple[Tensor, Alignment | None]:  # fmt: skip
    """``h_tilde_t = tanh(W_c [c_t; h_t])`` (Eq. 5) and ``a_t`` for queries ``h_t`` (B, T, d)
    from step ``t``; ``h_t`` itself without attention (Eq. 2). ``W_c`` may replace
    ``dec.W_c`` (an 8-bit copy when decoding with int8)."""
    if dec.attention is None:
        return h_t, None
    c_t, align = dec.attention(h_t, memory, t)  # (B, T, d)
    c_h = drop(torch.cat([c_t, h_t], -1), dec.hidden_dropout)  # (B, T, 2d)
    W = W_c or dec.W_c
    assert W is not None  # a decoder with attention has W_c
    return torch.tanh(W(c_h)), align  # (B, T, d)


def decoder_step(dec: Decoder, form: StepForm, x_t: Tensor, h_tilde: Tensor, h: Any, c: Any,
                 memory: Memory, t: StepIndex
                 ) -> tuple[Tensor, Any, Any, Alignment | None]:  # fmt: skip
    """The decoder's one step ``t`` (0-based), in the given form.

    ``x_t``: ``y_{t-1}`` embedded as ``form.cells`` reads it; ``h_tilde`` (B, d):
    ``h_tilde_{t-1}``, fed to layer 1 with input feeding (§3.3); ``h``, ``c``: every layer's
    state. The LSTM stack gives ``h_t``, attention ``c_t``, and Eq. 5 ``h_tilde_t``. Returns
    ``h_tilde_t`` (B, d), the new ``h`` and ``c``, and ``a_t``.
    """
    cells, weights, drop, W_c, _ = form
    fed = drop(h_tilde, dec.dropout) if dec.feed_input else None  # (B, d) h_tilde_{t-1}
    h_t, h, c = cells(dec, weights, x_t, fed, h, c)  # (B, 1, d) the top layer's h_t
    h_tilde, align = attentional(dec, h_t, memory, t, drop, W_c)  # (B, 1, d) Eq. 5
    return h_tilde.squeeze(1), h, c, align  # (B, d)


def first_rows(held: Any, n: int) -> Any:
    """The first ``n`` rows of a state as a form holds it: a per-layer list of (B, d), or an
    (L, B, d) tensor."""
    return [x[:n] for x in held] if isinstance(held, list) else held[:, :n]


def unroll(
    dec: Decoder, form: StepForm, x: Iterable[Tensor], h_tilde: Tensor, h: Any, c: Any,
    memory: Memory, keep_attention: bool = False, step: Step = decoder_step,
) -> tuple[list[Tensor], list[Tensor]]:  # fmt: skip
    """Teacher-forced decoding with input feeding (§3.3): :func:`decoder_step` at each step
    ``t`` from ``x[t]`` (``y_{t-1}`` as ``form.embed`` embeds it, (n_t, ...)), ``h_tilde_0``
    (B, d) and the state ``h``, ``c`` as ``form.cells`` holds it. Rows are sorted longest
    first where ``n_t`` falls: rows past ``n_t`` have ended and drop out of the batch.

    Returns each step's ``h_tilde_t`` (n_t, d) and, with ``keep_attention``, its dense
    ``a_t`` (n_t, 1, S). ``step``: :func:`decoder_step`, or a compiled form of it.
    """
    outs, attns = [], []
    for t, x_t in enumerate(x):
        n = x_t.size(0)
        if n < h_tilde.size(0):  # the sentences that ended leave the batch
            h, c, h_tilde = first_rows(h, n), first_rows(c, n), h_tilde[:n]
            memory = Memory(*(m[:n] for m in memory))
        h_tilde, h, c, align = step(dec, form, x_t, h_tilde, h, c, memory, t)  # (n, d)
        outs.append(h_tilde)
        if keep_attention:
            attns.append(align.dense(memory.h_bar_s.size(1)))  # (n, 1, S)
    return outs, attns


def decode_all_at_once(dec: Decoder, y_in: Tensor, state: DecoderState, memory: Memory,
                       return_attention: bool, drop: Drop = module_drop,
                       stack: Callable[..., tuple[Tensor, Any]] | None = None
                       ) -> tuple[Tensor, Tensor | None]:  # fmt: skip
    """Teacher-forced decoding without input feeding: no step reads the last one's
    ``h_tilde``, so one LSTM call reads all ``T`` steps and attention serves all ``T``
    queries at once (Eq. 5). Returns ``h_tilde`` (B, T, d) after ``output_dropout`` and, if
    asked, the dense ``a_t`` (B, T, S). ``stack(x, (h, c))``: the LSTM stack's call, if not
    ``dec.rnn`` itself."""
    x = drop(dec.embedding(y_in), dec.dropout)  # (B, T, e)
    h_t, _ = (stack or dec.rnn)(x, (state.h, state.c))  # (B, T, d)
    h_tilde, align = attentional(dec, h_t, memory, 0, drop)  # (B, T, d)
    dense = align.dense(memory.h_bar_s.size(1)) if return_attention and align is not None else None
    return drop(h_tilde, dec.output_dropout), dense  # (B, T, d)


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

    def step(
        self, y_prev: Tensor, state: DecoderState, memory: Memory, t: int | Tensor
    ) -> tuple[Tensor, DecoderState, Alignment | None]:
        """:func:`decoder_step` from ``y_{t-1}`` (B,) in the plain form: returns ``h_tilde_t``
        (B, d), the state and ``a_t``."""
        x_t = REFERENCE.embed(self, y_prev)  # (B, e)
        h_tilde, h, c, align = decoder_step(
            self, REFERENCE, x_t, state.h_tilde, state.h, state.c, memory, t
        )  # (B, d), (L, B, d) x2
        return h_tilde, DecoderState(h, c, h_tilde), align

    def forward(
        self, y_in: Tensor, state: DecoderState, memory: Memory, return_attention: bool = False
    ) -> tuple[Tensor, Tensor | None]:
        """Teacher-forced decoding of ``y_in`` (B, T) (``<s> y_1 ... y_{T-1}``).

        Returns ``h_tilde`` (B, T, d) for every step (after ``output_dropout``, the input of
        ``W_s``) and, if asked, the dense attention weights (B, T, S). Values at padded
        target positions are left unspecified: the loss never reads them.
        """
        if not self.feed_input:  # every step at once (the paper's models without feeding)
            return decode_all_at_once(self, y_in, state, memory, return_attention)
        x = (REFERENCE.embed(self, y_in[:, t]) for t in range(y_in.size(1)))  # each (B, e)
        outs, attns = unroll(self, REFERENCE, x, state.h_tilde, state.h, state.c, memory,
                             return_attention)  # fmt: skip
        dense = torch.cat(attns, 1) if return_attention else None  # (B, T, S)
        return self.output_dropout(torch.stack(outs, 1)), dense  # (B, T, d)
