"""The data, by concept:

* :mod:`.sources`: where corpora come from (the registry, download, a local mirror, the cache);
* :mod:`.text`: tokenisers, preprocessing recipes, the recaser, word dictionaries;
* :mod:`.store`: a training corpus prepared once into a memory-mapped store;
* :mod:`.loading`: batches, the resumable loader, the Lightning datamodule and a trained model's
  own data.

Vocabularies (:mod:`.vocab`) and line reading (:mod:`.io`) are shared by all four. The Lightning
datamodule is imported on first use only, so that decoding and metrics, which use the
vocabularies and batches, never import Lightning.
"""

from luong_lit.data.io import DataError, read_lines, read_parallel
from luong_lit.data.loading.batching import Batch, BucketBatchSampler, collate
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
        from luong_lit.data.loading import datamodule

        return getattr(datamodule, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
