"""The full encoder–decoder (paper §2–3) and the small interface that decoding uses.

Decoding code sees only :meth:`Seq2Seq.encode`, :meth:`Seq2Seq.step`,
:meth:`Seq2Seq.logits` and the ``index_select`` methods of :class:`Memory` and
:class:`DecoderState`; it never reaches into model internals.

This is the plain form of the model (``nn.LSTM``, ``F.cross_entropy``), to be read beside the
paper. The same parameters can be computed faster: an engine (:mod:`luong_lit.engines`)
chooses how, for training and decoding alike, without any hook in these modules.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor, nn

from luong_lit.errors import ConfigError
from luong_lit.nn.attention import Alignment, LocalPredictiveAttention, Memory, _Attention
from luong_lit.nn.decoder import Decoder, DecoderState
from luong_lit.nn.encoder import Encoder
from luong_lit.nn.init import INITS, initialise_
from luong_lit.nn.loss import output_nll
from luong_lit.nn.names import ATTENTIONS, SCORES, part_spec
from luong_lit.validate import OptionError, integer, one_of, positive, rate


def append_eos(src: Tensor, src_len: Tensor, eos_id: int, pad_id: int) -> tuple[Tensor, Tensor]:
    """Write ``</s>`` after each source sentence: (B, S) -> (B, S+1), lengths + 1."""
    src = nn.functional.pad(src, (0, 1), value=pad_id)  # (B, S+1)
    src = src.scatter(1, src_len.unsqueeze(1), eos_id)  # (B, S+1)
    return src, src_len + 1


#: The decoder's initial (h, c) from the encoder's final (h, c), each (L, B, d).
INIT_STATES: dict[str, Callable[[Tensor, Tensor], tuple[Tensor, Tensor]]] = {
    # the paper: layer l of the decoder starts from layer l of the encoder
    "copy": lambda h, c: (h, c),
    # Joey NMT's "last": the top layer's final h_t, as both h and c of every layer
    "last": lambda h, c: (h[-1:].expand_as(h).contiguous(),) * 2,
    # no link: the decoder learns about the source through attention only
    "zero": lambda h, c: (torch.zeros_like(h), torch.zeros_like(c)),
}


def build_attention(attention: Any, score: Any, dim: int, bias: bool = True) -> _Attention | None:
    """Compose "where to look" with "how to score" from their names and options.

    ``attention``: ``none``, a name (``global``, ``local_m``, ``local_p``) or
    ``{"name": ..., **options}``; ``score`` likewise (``dot``, ``general``, ``concat``,
    ``location``). See :mod:`luong_lit.nn.names`.
    """
    att = part_spec(attention, ATTENTIONS, "attention")
    if att is None:
        return None
    sc = part_spec(score, SCORES, "score")
    if sc is None:
        raise ConfigError("an attention model needs a score (dot, general, concat or location)")
    (att_name, att_opts), (score_name, score_opts) = att, sc
    try:
        try:
            score_obj = SCORES[score_name](dim=dim, bias=bias, **score_opts)
        except OptionError as err:
            raise err.within("score") from None
        if ATTENTIONS[att_name] is LocalPredictiveAttention:
            att_opts = {"dim": dim, "bias": bias, **att_opts}
        try:
            return ATTENTIONS[att_name](score=score_obj, **att_opts)
        except OptionError as err:
            raise err.within("attention") from None
    except OptionError:
        raise
    except (TypeError, ValueError) as err:
        raise ConfigError(
            f"invalid model configuration attention={att_name} score={score_name}: {err}"
        ) from None


def _check(
    att, feed_input: bool, init_state: str, tie_output: bool, embed_size: int, hidden_size: int
) -> None:
    """Refuse combinations that do not make a model, naming the options."""
    if init_state not in INIT_STATES:
        raise ConfigError(
            f"init_state={init_state!r} is unknown; choose one of {list(INIT_STATES)}"
        )
    if att is None and feed_input:
        raise ConfigError(
            "invalid model configuration attention=none feed_input=true: input feeding feeds "
            "the attentional vector h_tilde_t, which a model without attention does not have; "
            "set feed_input=false"
        )
    if att is None and init_state == "zero":
        raise ConfigError(
            "invalid model configuration attention=none init_state=zero: without attention "
            "the decoder sees the source only through its initial state; use copy or last"
        )
    if tie_output and embed_size != hidden_size:
        raise ConfigError(
            f"invalid model configuration tie_output=true: the target embedding "
            f"({embed_size}) and W_s ({hidden_size}) must have the same size"
        )


class Seq2Seq(nn.Module):
    """Stacked-LSTM encoder–decoder with optional Luong attention.

    Args:
        src_vocab_size, tgt_vocab_size: vocabulary sizes (separate embeddings).
        embed_size, hidden_size, num_layers: sizes (paper: 1000, 1000, 4).
        dropout: drop probability on every LSTM layer's input (paper: 0.2).
        attention: ``none``, ``global``, ``local_m``, ``local_p``, or ``{"name": ..., **options}``.
        score: ``dot``, ``general``, ``concat``, ``location``, or ``{"name": ..., **options}``.
        feed_input: input feeding (paper §3.3).
        reverse_source: read the source backwards (paper §4.1).
        bias: biases in LSTMs and linear layers (the authors' code has none,
            docs/paper_notes.md §0).
        init_scale: uniform initialisation range (paper: 0.1).
        init: ``uniform`` (the paper) or ``xavier`` (Glorot matrices, zero biases: Joey NMT).
        forget_bias: initial LSTM forget-gate bias (needs ``bias``). 0 leaves the uniform
            draw; tensorflow/nmt and Joey NMT start at 1.0, which speeds up early learning.
        hidden_dropout: drop probability on ``[c_t; h_t]`` before ``W_c`` (Eq. 5), as Joey
            NMT's ``hidden_dropout``. 0 is the paper (docs/paper_notes.md §7).
        output_dropout: drop probability on ``h_tilde_t`` before ``W_s`` (Eq. 6) in training,
            as Zaremba et al. (2014) and OpenNMT-py. 0 is the paper.
        pad_id, eos_id: ids of ``<pad>`` and ``</s>`` in the source vocabulary.
        src_eos: append ``</s>`` to every source sentence, so the encoder reads it and
            attention can rest on it (Joey NMT). False is the paper: attention covers the
            ``S`` source words only (docs/paper_notes.md §0). With ``reverse_source`` the
            ``</s>`` is still read last.
        init_state: the decoder's initial state: ``copy`` (the paper: layer ``l`` starts from
            the encoder's final ``(h, c)`` of layer ``l``), ``last`` (Joey NMT: the top layer's
            final ``h`` as ``h`` and ``c`` of every layer) or ``zero``.
        tie_output: use the target embedding matrix as ``W_s`` too (Press & Wolf, 2017).
            Needs ``embed_size == hidden_size``. False is the paper: separate matrices.
    """

    def __init__(
        self,
        src_vocab_size: int,
        tgt_vocab_size: int,
        embed_size: int = 256,
        hidden_size: int = 256,
        num_layers: int = 2,
        dropout: float = 0.0,
        attention: Any = "global",
        score: Any = "general",
        feed_input: bool = True,
        reverse_source: bool = False,
        bias: bool = True,
        init_scale: float = 0.1,
        forget_bias: float = 0.0,
        hidden_dropout: float = 0.0,
        init: str = "uniform",
        pad_id: int = 0,
        src_eos: bool = False,
        eos_id: int = 3,
        init_state: str = "copy",
        tie_output: bool = False,
        output_dropout: float = 0.0,
    ) -> None:
        super().__init__()
        self.src_eos, self.eos_id, self.pad_id = src_eos, eos_id, pad_id
        self.init_state = init_state
        for name, size in (("embed_size", embed_size), ("hidden_size", hidden_size)):
            integer(name, size, 1)
        integer("num_layers", num_layers, 1)
        for name, p in (
            ("dropout", dropout),
            ("hidden_dropout", hidden_dropout),
            ("output_dropout", output_dropout),
        ):
            rate(name, p)
        positive("init_scale", init_scale)
        one_of("init", init, INITS)
        att = build_attention(attention, score, hidden_size, bias)
        _check(att, feed_input, init_state, tie_output, embed_size, hidden_size)
        self.encoder = Encoder(
            src_vocab_size,
            embed_size,
            hidden_size,
            num_layers,
            dropout,
            reverse_source,
            bias,
            pad_id,
            eos_last=src_eos,
        )
        self.decoder = Decoder(
            tgt_vocab_size,
            embed_size,
            hidden_size,
            num_layers,
            att,
            feed_input,
            dropout,
            bias,
            pad_id,
            hidden_dropout,
            tie_output,
            output_dropout,
        )
        self.attention = att
        initialise_(self, init, init_scale)
        if forget_bias and bias:
            self._set_forget_bias(forget_bias, hidden_size, num_layers)

    @torch.no_grad()
    def _set_forget_bias(self, value: float, d: int, num_layers: int) -> None:
        """Forget gates start at ``value`` in ``b_ih`` and 0 in ``b_hh`` (gate order i, f, g, o)."""
        for rnn in (self.encoder.rnn, self.decoder.rnn):
            for layer in range(num_layers):
                getattr(rnn, f"bias_ih_l{layer}")[d : 2 * d] = value
                getattr(rnn, f"bias_hh_l{layer}")[d : 2 * d] = 0.0

    @property
    def has_attention(self) -> bool:
        """False for the non-attentional baseline, whose steps give no alignment."""
        return self.attention is not None

    @property
    def content_based(self) -> bool:
        """Footnote 14: content-based scores align ``y_{t-1}`` with ``a_t``; location ``y_t``."""
        return self.attention is None or self.attention.score.content_based

    @property
    def tgt_vocab_size(self) -> int:
        return self.decoder.W_s.out_features

    # ------------------------------------------------------------------ decoding interface
    def encode(self, src: Tensor, src_len: Tensor) -> tuple[Memory, DecoderState]:
        """Encode a batch: the attention memory and the decoder's initial state."""
        if self.src_eos:
            src, src_len = append_eos(src, src_len, self.eos_id, self.pad_id)  # (B, S+1), (B,)
        h_bar_s, (h, c) = self.encoder(src, src_len)  # (B, S, d), (L, B, d) x2
        return self.initial(h_bar_s, h, c, src_len)

    def initial(
        self, h_bar_s: Tensor, h: Tensor, c: Tensor, src_len: Tensor
    ) -> tuple[Memory, DecoderState]:
        """The attention memory and the decoder's first state from the encoder's output."""
        if self.attention is not None:
            memory = self.attention.prepare(h_bar_s, src_len)
        else:
            S = h_bar_s.size(1)
            valid = torch.arange(S, device=h_bar_s.device) < src_len.unsqueeze(1)  # (B, S)
            memory = Memory(h_bar_s, h_bar_s, src_len, valid)
        h, c = INIT_STATES[self.init_state](h, c)
        h_tilde0 = h_bar_s.new_zeros(h_bar_s.size(0), h.size(-1))  # (B, d) zeros at t = 1
        return memory, DecoderState(h, c, h_tilde0)

    def step(
        self, y_prev: Tensor, state: DecoderState, memory: Memory, t: int
    ) -> tuple[Tensor, DecoderState, Alignment | None]:
        """One step from ``y_{t-1}`` (B,) at 0-based step ``t``: logits (B, V), state, ``a_t``."""
        h_tilde, state, align = self.decoder.step(y_prev, state, memory, t)
        return self.logits(h_tilde), state, align

    def logits(self, h_tilde: Tensor) -> Tensor:
        """``W_s h_tilde_t`` (Eq. 6), the pre-softmax scores: (..., d) -> (..., V)."""
        return self.decoder.W_s(h_tilde)

    # ------------------------------------------------------------------ training
    def forward(
        self, src: Tensor, src_len: Tensor, tgt_in: Tensor, return_attention: bool = False
    ) -> tuple[Tensor, Tensor | None]:
        """Teacher-forced pass: ``h_tilde`` (B, T, d) and optionally dense ``a_t`` (B, T, S)."""
        memory, state = self.encode(src, src_len)
        return self.decoder(tgt_in, state, memory, return_attention)

    def output_nll(
        self, h_tilde: Tensor, targets: Tensor, label_smoothing: float = 0.0, ignore_index=-100
    ) -> Tensor:
        """``Σ_i -log softmax(W_s h_tilde_i)[y_i]`` (Eq. 6): ``h_tilde`` (N, d), targets (N,);
        rows whose target is ``ignore_index`` count for nothing."""
        W_s = self.decoder.W_s
        return output_nll(h_tilde, W_s.weight, W_s.bias, targets, label_smoothing, ignore_index)
