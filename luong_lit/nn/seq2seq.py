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
from luong_lit.nn.attention import Alignment, Attention, Memory
from luong_lit.nn.decoder import Decoder, DecoderState
from luong_lit.nn.encoder import Encoder
from luong_lit.nn.init import initialise_
from luong_lit.nn.interface import ModelFacts, OneModel
from luong_lit.nn.loss import output_nll
from luong_lit.nn.names import ATTENTIONS, SCORES, build_part, part_spec
from luong_lit.nn.options import NET_OPTIONS, Architecture, Sizes
from luong_lit.validate import OptionError, split_options, takes_options


def append_eos(src: Tensor, src_len: Tensor, *, eos_id: int, pad_id: int) -> tuple[Tensor, Tensor]:
    """Write ``</s>`` after each source sentence: (B, S) -> (B, S+1), lengths + 1."""
    src = nn.functional.pad(src, (0, 1), value=pad_id)  # (B, S+1)
    src = src.scatter(1, src_len.unsqueeze(1), eos_id)  # (B, S+1)
    return src, src_len + 1


#: How an encoder is computed: ``read(encoder, src, src_len) -> (h_bar_s, (h, c))``.
EncoderRead = Callable[[Encoder, Tensor, Tensor], tuple[Tensor, tuple[Tensor, Tensor]]]


def _read_with_module(
    encoder: Encoder, src: Tensor, src_len: Tensor
) -> tuple[Tensor, tuple[Tensor, Tensor]]:
    read: tuple[Tensor, tuple[Tensor, Tensor]] = encoder(src, src_len)  # (B, S, d), (L, B, d) x2
    return read


#: The decoder's initial (h, c) from the encoder's final (h, c), each (L, B, d).
INIT_STATES: dict[str, Callable[[Tensor, Tensor], tuple[Tensor, Tensor]]] = {
    # the authors' code (docs/paper_notes.md §0): decoder layer l starts from encoder layer l
    "copy": lambda h, c: (h, c),
    # Joey NMT's "last": the top layer's final h_t, as both h and c of every layer
    "last": lambda h, c: (h[-1:].expand_as(h).contiguous(),) * 2,
    # no link: the decoder learns about the source through attention only
    "zero": lambda h, c: (torch.zeros_like(h), torch.zeros_like(c)),
}


def build_attention(attention: Any, score: Any, dim: int, *, bias: bool = True) -> Attention | None:
    """Compose "where to look" with "how to score" from their registered names and options.

    ``attention``: ``none``, a name (``global``, ``local_m``, ``local_p``, or any other
    registered, :mod:`luong_lit.nn.names`) or ``{"name": ..., **options}``; ``score`` likewise
    (``dot``, ``general``, ``concat``, ``location``, ...). Each constructor is given ``dim`` and
    ``bias`` where it names them (:func:`~luong_lit.nn.names.build_part`).
    """
    att = part_spec(attention, ATTENTIONS, "attention")
    if att is None:
        return None
    sc = part_spec(score, SCORES, "score")
    if sc is None:
        raise ConfigError("an attention model needs a score (dot, general, concat or location)")
    (att_name, att_opts), (score_name, score_opts) = att, sc
    given = {"dim": dim, "bias": bias}
    try:
        try:
            score_obj = build_part(SCORES[score_name], score_opts, given)
        except OptionError as err:
            raise err.within("score") from None
        try:
            built: Attention = build_part(ATTENTIONS[att_name], att_opts, given, score=score_obj)
            return built
        except OptionError as err:
            raise err.within("attention") from None
    except OptionError:
        raise
    except (TypeError, ValueError) as err:
        raise ConfigError(
            f"invalid model configuration attention={att_name} score={score_name}: {err}"
        ) from None


def _check(att: Attention | None, arch: Architecture, sizes: Sizes) -> None:
    """Refuse combinations that do not make a model, naming the options."""
    if arch.init_state not in INIT_STATES:
        raise ConfigError(
            f"init_state={arch.init_state!r} is unknown; choose one of {list(INIT_STATES)}"
        )
    if att is None and arch.feed_input:
        raise ConfigError(
            "invalid model configuration attention=none feed_input=true: input feeding feeds "
            "the attentional vector h_tilde_t, which a model without attention does not have; "
            "set feed_input=false"
        )
    if att is None and arch.init_state == "zero":
        raise ConfigError(
            "invalid model configuration attention=none init_state=zero: without attention "
            "the decoder sees the source only through its initial state; use copy or last"
        )
    if arch.tie_output and sizes.embed_size != sizes.hidden_size:
        e, h = sizes.embed_size, sizes.hidden_size
        raise OptionError.about(
            f"invalid model configuration {{tie_output}}=true: the target embedding "
            f"({{embed_size}}={e}) is also W_s ({{hidden_size}}={h}), so both must have one "
            f"size; also set {{embed_size}}={h}, or set {{tie_output}}=false",
            "tie_output", "embed_size", "hidden_size",
        )  # fmt: skip


def facts_of(att: Attention | None, arch: Architecture, tgt_vocab_size: int) -> ModelFacts:
    """What a model of these parts is, for every form of it to hand on."""
    return ModelFacts(
        has_attention=att is not None,  # False: the baseline, whose steps give no alignment
        content_based=att is None or att.score.content_based,  # footnote 14 (y_{t-1} with a_t)
        tgt_vocab_size=tgt_vocab_size,
        src_eos=arch.src_eos,
        window=None if att is None else att.half_width,  # local attention's D (§3.2)
        attention_kind=None if att is None else type(att).__name__,
    )


class Seq2Seq(nn.Module, OneModel):
    """Stacked-LSTM encoder–decoder with optional Luong attention.

    Args:
        src_vocab_size, tgt_vocab_size: vocabulary sizes (separate embeddings).
        pad_id, eos_id: ids of ``<pad>`` and ``</s>`` in the source vocabulary.
        options: the keys of the ``model.net`` config, each a field of one group of
            :mod:`luong_lit.nn.options` (where each is described):

            * :class:`~luong_lit.nn.options.Sizes`: ``embed_size``, ``hidden_size``,
              ``num_layers``;
            * :class:`~luong_lit.nn.options.Architecture`, the paper's switches: ``attention``,
              ``score``, ``feed_input``, ``reverse_source``, ``src_eos``, ``init_state``,
              ``tie_output``, ``bias``;
            * :class:`~luong_lit.nn.options.Regularisation`: ``dropout``, ``hidden_dropout``,
              ``output_dropout``;
            * :class:`~luong_lit.nn.options.Initialisation`: ``init``, ``init_scale``,
              ``forget_bias``.

            A key of none of them raises :class:`~luong_lit.validate.UnknownOption`.
    """

    @takes_options(*NET_OPTIONS)
    def __init__(
        self,
        src_vocab_size: int,
        tgt_vocab_size: int,
        *,
        pad_id: int = 0,
        eos_id: int = 3,
        **options: Any,
    ) -> None:
        super().__init__()
        sizes, arch, regularisation, init = split_options(Seq2Seq, NET_OPTIONS, options)
        self.eos_id, self.pad_id, self.init_state = eos_id, pad_id, arch.init_state
        att = build_attention(arch.attention, arch.score, dim=sizes.hidden_size, bias=arch.bias)
        _check(att, arch, sizes)
        self.facts = facts_of(att, arch, tgt_vocab_size)  # has_attention, window, ...: read here
        parts = {"sizes": sizes, "architecture": arch, "regularisation": regularisation}
        self.encoder = Encoder(vocab_size=src_vocab_size, pad_id=pad_id, **parts)
        self.decoder = Decoder(vocab_size=tgt_vocab_size, pad_id=pad_id, attention=att, **parts)
        self.attention = att
        initialise_(self, init.init, init.init_scale)
        if init.forget_bias and arch.bias:
            self._set_forget_bias(init.forget_bias, sizes.hidden_size, sizes.num_layers)

    @torch.no_grad()
    def _set_forget_bias(self, value: float, d: int, num_layers: int) -> None:
        """Forget gates start at ``value`` in ``b_ih`` and 0 in ``b_hh`` (gate order i, f, g, o)."""
        for rnn in (self.encoder.rnn, self.decoder.rnn):
            for layer in range(num_layers):
                getattr(rnn, f"bias_ih_l{layer}")[d : 2 * d] = value
                getattr(rnn, f"bias_hh_l{layer}")[d : 2 * d] = 0.0

    # ------------------------------------------------------------------ decoding interface
    def encode(
        self, src: Tensor, src_len: Tensor, read: EncoderRead | None = None
    ) -> tuple[Memory, DecoderState]:
        """Encode a batch: the attention memory and the decoder's initial state. ``read``:
        how the encoder is computed, ``read(encoder, src, src_len) -> (h_bar_s, (h, c))``
        (an engine's faster form; default: the encoder module itself)."""
        if self.src_eos:
            src, src_len = append_eos(
                src, src_len, eos_id=self.eos_id, pad_id=self.pad_id
            )  # (B, S+1), (B,)
        read = read or _read_with_module
        h_bar_s, (h, c) = read(self.encoder, src, src_len)  # (B, S, d), (L, B, d) x2
        return self.initial(h_bar_s, h, c, src_len)

    def initial(
        self, h_bar_s: Tensor, h: Tensor, c: Tensor, src_len: Tensor
    ) -> tuple[Memory, DecoderState]:
        """The attention memory and the decoder's first state from the encoder's output."""
        if self.attention is not None:
            memory = self.attention.prepare(h_bar_s, src_len)
        else:
            memory = Memory.of(h_bar_s, h_bar_s, src_len)
        h, c = INIT_STATES[self.init_state](h, c)
        h_tilde0 = h_bar_s.new_zeros(h_bar_s.size(0), h.size(-1))  # (B, d) zeros at t = 1
        return memory, DecoderState(h, c, h_tilde0)

    def step(
        self, y_prev: Tensor, state: DecoderState, memory: Memory, t: int | Tensor
    ) -> tuple[Tensor, DecoderState, Alignment | None]:
        """One step from ``y_{t-1}`` (B,) at 0-based step ``t``: logits (B, V), state, ``a_t``."""
        h_tilde, state, align = self.decoder.step(y_prev, state, memory, t)
        return self.logits(h_tilde), state, align

    def logits(self, h_tilde: Tensor) -> Tensor:
        """``W_s h_tilde_t`` (Eq. 6), the pre-softmax scores: (..., d) -> (..., V)."""
        logits: Tensor = self.decoder.W_s(h_tilde)  # (..., V)
        return logits

    # ------------------------------------------------------------------ training
    def forward(
        self, src: Tensor, src_len: Tensor, tgt_in: Tensor, return_attention: bool = False
    ) -> tuple[Tensor, Tensor | None]:
        """Teacher-forced pass: ``h_tilde`` (B, T, d) and optionally dense ``a_t`` (B, T, S)."""
        memory, state = self.encode(src, src_len)
        out: tuple[Tensor, Tensor | None] = self.decoder(
            tgt_in, state, memory, return_attention=return_attention
        )  # (B, T, d), (B, T, S) or None
        return out

    def output_nll(
        self,
        h_tilde: Tensor,
        targets: Tensor,
        label_smoothing: float = 0.0,
        ignore_index: int = -100,
    ) -> Tensor:
        """``Σ_i -log softmax(W_s h_tilde_i)[y_i]`` (Eq. 6): ``h_tilde`` (N, d), targets (N,);
        rows whose target is ``ignore_index`` count for nothing."""
        W_s = self.decoder.W_s
        return output_nll(
            h_tilde,
            targets,
            weight=W_s.weight,
            bias=W_s.bias,
            label_smoothing=label_smoothing,
            ignore_index=ignore_index,
        )
