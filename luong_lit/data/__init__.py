"""Corpora, tokenisation, vocabularies and batching.

The Lightning datamodule is imported on first use only, so that decoding and metrics, which
use the vocabularies and batches here, never import Lightning.
"""

from luong_lit.data.batching import Batch, BucketBatchSampler, collate
from luong_lit.data.io import DataError, read_lines, read_parallel
from luong_lit.data.vocab import Vocab

__all__ = [
    "Batch",
    "BucketBatchSampler",
    "DataError",
    "Split",
    "TranslationDataModule",
    "Vocab",
    "collate",
    "read_lines",
    "read_parallel",
]


def __getattr__(name: str):
    if name in ("Split", "TranslationDataModule"):
        from luong_lit.data import datamodule

        return getattr(datamodule, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
