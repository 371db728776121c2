"""Metrics: pure functions of strings and of models (no Lightning)."""

from luong_lit.metrics.bleu import corpus_bleu_detok, corpus_bleu_tok
from luong_lit.metrics.buckets import bleu_by_length

__all__ = ["corpus_bleu_tok", "corpus_bleu_detok", "bleu_by_length"]
