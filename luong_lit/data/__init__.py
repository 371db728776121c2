"""Corpora, tokenisation, vocabularies and batching."""
from luong_lit.data.batching import Batch, BucketBatchSampler, collate
from luong_lit.data.datamodule import Split, TranslationDataModule
from luong_lit.data.io import DataError, read_lines, read_parallel
from luong_lit.data.vocab import Vocab

__all__ = ["Batch", "BucketBatchSampler", "DataError", "Split", "TranslationDataModule", "Vocab",
           "collate", "read_lines", "read_parallel"]
