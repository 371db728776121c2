"""The options of :class:`~luong_lit.data.TranslationDataModule`, in three groups whose fields
are the keys of a data config (``conf/data/*.yaml``).

Each group is a frozen dataclass that checks its own values when it is made. The datamodule
takes every field as a keyword argument, makes one object of each group, and reads its options
from the objects. :class:`DataOptions` holds a whole data config: the three groups and the keys
they were read from (a checkpoint's ``data``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from luong_lit.data.io import DataError
from luong_lit.data.sources.named import dataset_names
from luong_lit.data.text.preprocess import Preprocessing
from luong_lit.errors import ConfigError
from luong_lit.validate import integer


@dataclass(frozen=True)
class Corpus:
    """Which corpus, in which direction, from which files, read how.

    Attributes:
        dataset: ``multi30k``, ``wmt14_ende``, ``iwslt14_deen``, another registered corpus
            (:func:`~luong_lit.data.sources.register_corpus`) or ``files``.
        src_lang, tgt_lang: the direction; every named dataset works both ways.
        train, dev: a split name, a list of corpus names (concatenated), or for ``files`` a
            mapping ``{src: path, tgt: path}``.
        test: a mapping from a test-set name to a split spec as above (None: no test sets; a
            dict once made).
        variant: ``tok`` or ``raw`` (Multi30k only).
        mirror: a local directory laid out like the official data (else ``LUONG_LIT_DATA``).
        clean_control: replace control characters (other than tab) in the text by spaces; by
            default a line holding one is an error that names the file and line.
    """

    dataset: str = "multi30k"
    src_lang: str = "en"
    tgt_lang: str = "de"
    train: Any = "train"
    dev: Any = "val"
    test: Mapping[str, Any] | None = None
    variant: str = "tok"
    mirror: str | None = None
    clean_control: bool = False

    def __post_init__(self) -> None:
        if self.dataset not in dataset_names():
            raise DataError(
                f"unknown dataset {self.dataset!r}; choose one of {', '.join(dataset_names())}"
            )
        if self.test is not None and not isinstance(self.test, Mapping):
            raise ConfigError(
                f"data.test must map test-set names to splits ({{name: {{src: PATH, tgt: PATH}}}}"
                f" or {{name: SPLIT}}), got {self.test!r}"
            )
        object.__setattr__(self, "test", dict(self.test or {}))


@dataclass(frozen=True)
class Tokenisation:
    """How the text becomes tokens, which training pairs are kept, and the vocabularies.

    Attributes:
        tokenizer: ``none`` (pre-tokenised), ``moses`` or ``sentencepiece``.
        tokenizer_opts: passed on to the tokeniser (``aggressive``, ``escape``, ``lowercase``,
            ``model_type``, ``vocab_size``); a dict once made.
        vocab_size, min_freq: keep the top-K words (paper: 50K) and/or words with count ≥
            min_freq.
        max_len, length_mode: drop (``filter``) or cut (``truncate``) training pairs over
            max_len.
        prepare_workers: processes that tokenise the training corpus when its store is
            prepared (default: one per core).
        preprocess, recase_from: how the text was made from raw text, and a cased target-side
            text to learn casing from, for ``translate`` (see
            :mod:`luong_lit.data.text.user_text`); checked here, kept in the checkpoint.
    """

    tokenizer: str = "none"
    tokenizer_opts: Mapping[str, Any] | None = None
    vocab_size: int | None = 50000
    min_freq: int = 1
    max_len: int | None = 50
    length_mode: str = "filter"
    prepare_workers: int | None = None
    preprocess: Mapping | None = None
    recase_from: str | None = None

    def __post_init__(self) -> None:
        integer("min_freq", self.min_freq, 1)
        for name in ("max_len", "vocab_size", "prepare_workers"):
            integer(name, getattr(self, name), 1, nullable=True)
        Preprocessing.from_dict(self.preprocess)  # a wrong step fails now, not at translation
        object.__setattr__(self, "tokenizer_opts", dict(self.tokenizer_opts or {}))

    @property
    def lowercase(self) -> bool:
        """Whether the tokeniser lowercases the text (``tokenizer_opts.lowercase``; not by
        default)."""
        return bool(self.tokenizer_opts.get("lowercase", False))


@dataclass(frozen=True)
class Batching:
    """How the pairs are batched and loaded.

    Attributes:
        batch_size, batch_by: sentences (paper: 128) or target tokens per training batch
            (``sentences`` or ``tokens``).
        max_tokens: fairseq's convention: batches of at most this many padded target tokens
            (``</s>`` included), sentences of similar length together, the batches shuffled;
            it replaces ``batch_size``/``batch_by`` for training (None: off).
        eval_batch_size: sentences per batch of the dev and test sets.
        chunk_batches: sort by target length within chunks of this many batches
            (docs/paper_notes.md §8).
        seed: the batch order of every epoch (with the epoch's number).
        num_workers: the loaders' worker processes; None: none on a CPU, and on a GPU
            :data:`~luong_lit.data.loading.workers.GPU_WORKERS`, with pinned memory.
    """

    batch_size: int = 128
    batch_by: str = "sentences"
    max_tokens: int | None = None
    eval_batch_size: int = 128
    chunk_batches: int = 100
    seed: int = 1234
    num_workers: int | None = None

    def __post_init__(self) -> None:
        for name in ("batch_size", "eval_batch_size", "chunk_batches"):
            integer(name, getattr(self, name), 1)
        integer("num_workers", self.num_workers, 0, nullable=True)
        integer("max_tokens", self.max_tokens, 1, nullable=True)

    def training_budget(self) -> tuple[int, str]:
        """A training batch's size and its unit (``max_tokens`` first)."""
        if self.max_tokens is not None:
            return self.max_tokens, "tokens"
        return self.batch_size, self.batch_by


#: The groups, in the order of the datamodule's signature (and of their checks).
DATA_OPTIONS = (Corpus, Tokenisation, Batching)


@dataclass(frozen=True)
class DataOptions:
    """A whole data config: its three option groups, and the keys they were read from.

    A checkpoint keeps its run's data config (``data`` of
    :class:`~luong_lit.checkpoint.meta.CheckpointMeta`, read by
    :func:`~luong_lit.checkpoint.groups.data_options`): its readers take each option from the
    groups, where a key the config lacks has the group's default, and the model's datamodule is
    made again from ``config`` (:func:`~luong_lit.data.loading.model_data.datamodule_for`).

    Attributes:
        corpus, tokenisation, batching: the groups (:data:`DATA_OPTIONS`).
        config: the config's keys as given, in their order (a key no group has too).
    """

    corpus: Corpus = field(default_factory=Corpus)
    tokenisation: Tokenisation = field(default_factory=Tokenisation)
    batching: Batching = field(default_factory=Batching)
    config: dict[str, Any] = field(default_factory=dict)

    @property
    def direction(self) -> tuple[Any, Any]:
        """``(src_lang, tgt_lang)`` as the config states them, None for one it does not state
        (a checkpoint from before its data config was kept), where ``corpus`` has its defaults:
        for what must not take a direction for granted (``align --rwth``)."""
        return self.config.get("src_lang"), self.config.get("tgt_lang")
