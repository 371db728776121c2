"""Plain-PyTorch model code: scores, attention, encoder, decoder (no Lightning here)."""
from luong_lit.nn.attention import (Alignment, GlobalAttention, LocalMonotonicAttention,
                                    LocalPredictiveAttention, Memory)
from luong_lit.nn.decoder import DecoderState
from luong_lit.nn.scores import ConcatScore, DotScore, GeneralScore, LocationScore
from luong_lit.nn.seq2seq import ConfigError, Seq2Seq, build_attention

__all__ = [
    "Alignment", "ConcatScore", "ConfigError", "DecoderState", "DotScore", "GeneralScore",
    "GlobalAttention", "LocalMonotonicAttention", "LocalPredictiveAttention", "LocationScore",
    "Memory", "Seq2Seq", "build_attention",
]
