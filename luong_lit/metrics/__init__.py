"""Metrics: pure functions of strings."""
from luong_lit.metrics.bleu import corpus_bleu_tok

__all__ = ["corpus_bleu_tok"]
