"""The paper's model in plain PyTorch: scores, attention, encoder, decoder (no Lightning here).

:mod:`luong_lit.nn.fast` computes the same model faster, with the same parameters; an engine
(:mod:`luong_lit.engines`) chooses between them.
"""

from luong_lit.errors import ConfigError
from luong_lit.nn.attention import (
    Alignment,
    GlobalAttention,
    LocalMonotonicAttention,
    LocalPredictiveAttention,
    Memory,
)
from luong_lit.nn.decoder import DecoderState
from luong_lit.nn.names import ATTENTIONS, SCORES
from luong_lit.nn.scores import ConcatScore, DotScore, GeneralScore, LocationScore
from luong_lit.nn.seq2seq import Seq2Seq, build_attention

__all__ = [
    "ATTENTIONS",
    "SCORES",
    "Alignment",
    "ConcatScore",
    "ConfigError",
    "DecoderState",
    "DotScore",
    "GeneralScore",
    "GlobalAttention",
    "LocalMonotonicAttention",
    "LocalPredictiveAttention",
    "LocationScore",
    "Memory",
    "Seq2Seq",
    "build_attention",
]
