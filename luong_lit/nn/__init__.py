"""The paper's model in plain PyTorch: scores, attention, encoder, decoder (no Lightning here).

:mod:`luong_lit.nn.fast` computes the same model faster, with the same parameters; an engine
(:mod:`luong_lit.engines`) chooses between them. New attentions and scores subclass
:class:`Attention` (or :class:`LocalAttention`) and :class:`Score`, and are named by
:func:`register_attention` and :func:`register_score`, as the paper's are.
"""

from luong_lit.errors import ConfigError
from luong_lit.nn.attention import (
    Alignment,
    Attention,
    GlobalAttention,
    LocalAttention,
    LocalMonotonicAttention,
    LocalPredictiveAttention,
    Memory,
    register_attention,
)
from luong_lit.nn.decoder import DecoderState
from luong_lit.nn.names import ATTENTIONS, SCORES
from luong_lit.nn.scores import (
    ConcatScore,
    DotScore,
    GeneralScore,
    LocationScore,
    Score,
    register_score,
)
from luong_lit.nn.seq2seq import Seq2Seq, build_attention

__all__ = [
    "ATTENTIONS",
    "SCORES",
    "Alignment",
    "Attention",
    "ConcatScore",
    "ConfigError",
    "DecoderState",
    "DotScore",
    "GeneralScore",
    "GlobalAttention",
    "LocalAttention",
    "LocalMonotonicAttention",
    "LocalPredictiveAttention",
    "LocationScore",
    "Memory",
    "Score",
    "Seq2Seq",
    "build_attention",
    "register_attention",
    "register_score",
]
