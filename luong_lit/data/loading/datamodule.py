"""The LightningDataModule: named corpora or files → a prepared store → batches.

Training reads its batches from the memory-mapped store of :mod:`luong_lit.data.store.prepare`
(prepared on first use, then opened by every later run with the same settings); the dev and
test sets, a few thousand sentences, are read and tokenised at every start.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any

import lightning as L
import torch
from torch.utils.data import DataLoader

from luong_lit.data.io import DataError
from luong_lit.data.loading.batching import BucketBatchSampler, collate
from luong_lit.data.loading.buckets import BucketPadding, padded_collate
from luong_lit.data.loading.loader import ResumableLoader
from luong_lit.data.loading.options import DATA_OPTIONS
from luong_lit.data.loading.splits import Split, read_pairs, split_files, tokenized_split
from luong_lit.data.loading.workers import loader_workers
from luong_lit.data.sources.fetch import mirror_dir
from luong_lit.data.store.chunks import length_filter, make_tokenizers
from luong_lit.data.store.prepare import ensure_store
from luong_lit.data.store.spec import CorpusSpec
from luong_lit.data.store.token_store import SIDES, TokenStore
from luong_lit.data.text.tokenize import make_tokenizer
from luong_lit.data.vocab import Vocab
from luong_lit.validate import OptionError, split_options, takes_options

log = logging.getLogger(__name__)


class TranslationDataModule(L.LightningDataModule):
    """Parallel data for training and evaluation.

    Its keyword arguments are the keys of a data config, each a field of one group of
    :mod:`luong_lit.data.loading.options` (where each is described), kept as ``self.corpus``,
    ``self.tokenisation`` and ``self.batching``:

    * :class:`~luong_lit.data.loading.options.Corpus`: ``dataset``, ``src_lang``, ``tgt_lang``,
      ``train``, ``dev``, ``test``, ``variant``, ``mirror``, ``clean_control``;
    * :class:`~luong_lit.data.loading.options.Tokenisation`: ``tokenizer``, ``tokenizer_opts``,
      ``vocab_size``, ``min_freq``, ``max_len``, ``length_mode``, ``prepare_workers``,
      ``preprocess``, ``recase_from`` (the last two describe the text for ``translate``, see
      :mod:`luong_lit.data.text.user_text`: checked here, kept in the checkpoint);
    * :class:`~luong_lit.data.loading.options.Batching`: ``batch_size``, ``batch_by``,
      ``eval_batch_size``, ``chunk_batches``, ``seed``, ``num_workers``.

    A key of none of them raises :class:`~luong_lit.validate.UnknownOption`.
    """

    @takes_options(*DATA_OPTIONS)
    def __init__(self, **options: Any) -> None:
        super().__init__()
        groups = split_options(TranslationDataModule, DATA_OPTIONS, options)
        self.corpus, self.tokenisation, self.batching = groups
        longest = self.tokenisation.max_len
        if self.batching.max_tokens is not None and longest and self.batching.max_tokens <= longest:
            raise OptionError("max_tokens", self.batching.max_tokens,
                              f"is out of range: it must hold the longest sentence, max_len="
                              f"{longest} words and </s>: {longest + 1} or more")  # fmt: skip
        self.mirror = mirror_dir(self.corpus.mirror)
        self.train_store: TokenStore | None = None
        self.splits: dict[str, Split] = {}
        self.src_vocab: Vocab | None = None
        self.tgt_vocab: Vocab | None = None
        self.tokenizers: dict[str, Any] = {}
        self._train_loader: ResumableLoader | None = None  # its position goes into checkpoints
        self._resume_position: dict[str, int] | None = None  # a checkpoint's, for the next loader
        # (source words, target words) to encode with instead of building vocabularies: a
        # fine-tuned model's (``init_from``); set before :meth:`setup`
        self.given_vocab: tuple[tuple[str, ...], tuple[str, ...]] | None = None
        # the training batches padded to their buckets in the loader (a fixed-shape engine's:
        # its ``padding()``, set by the training module before the loaders are made)
        self.pad_to: BucketPadding | None = None

    @property
    def test_spec(self) -> dict[str, Any]:
        """The test sets by name (``corpus.test``), each a split spec."""
        return self.corpus.test

    # ------------------------------------------------------------------ reading
    def _paths(self, spec: Any) -> list[tuple[Path, Path]]:
        """(src, tgt) file pairs for a split spec."""
        return split_files(spec, corpus=self.corpus, mirror=self.mirror)

    def read_pairs(self, spec: Any) -> tuple[list[str], list[str]]:
        """The source and target lines of a split spec (``train``, ``cfg.data.dev``, a list of
        corpora, ``{src: PATH, tgt: PATH}``), read as training reads them: checked, untokenised."""
        return read_pairs(self._paths(spec), self.corpus.clean_control)

    def _tokenize(self, name: str, src: Sequence[str], tgt: Sequence[str]) -> Split:
        keep_text = name != "train" and self.tokenisation.tokenizer != "none"
        return tokenized_split(name, src, tgt, tokenizers=self.tokenizers, keep_text=keep_text)

    def _encode(self, split: Split) -> None:
        split.encode(self.src_vocab, self.tgt_vocab)

    # ------------------------------------------------------------------ setup
    def corpus_spec(self) -> CorpusSpec:
        """What decides the training store: files, direction, tokeniser, vocabulary, filter."""
        corpus, tok = self.corpus, self.tokenisation
        return CorpusSpec(
            files=tuple((str(s), str(t)) for s, t in self._paths(corpus.train)),
            src_lang=corpus.src_lang,
            tgt_lang=corpus.tgt_lang,
            tokenizer=tok.tokenizer,
            tokenizer_opts=tok.tokenizer_opts,
            vocab_size=tok.vocab_size,
            min_freq=tok.min_freq,
            max_len=tok.max_len,
            length_mode=tok.length_mode,
            clean_control=corpus.clean_control,
            given_vocab=self.given_vocab,
        )

    def setup(self, stage: str | None = None) -> None:
        if self.src_vocab is not None:
            return
        self.train_store = ensure_store(self.corpus_spec(), self.tokenisation.prepare_workers)
        store = self.train_store
        self.src_vocab, self.tgt_vocab = store.vocabs["src"], store.vocabs["tgt"]
        protos = {side: store.sentencepiece(side) for side in SIDES}
        self.tokenizers = make_tokenizers(self.corpus_spec(), protos)
        self.splits = {"dev": self._tokenize("dev", *self.read_pairs(self.corpus.dev))}
        for name, spec in self.test_spec.items():
            self.splits[name] = self._tokenize(name, *self.read_pairs(spec))
        for split in self.splits.values():
            self._encode(split)
        log.info(
            "train pairs %d, vocab src %d tgt %d (%s)",
            len(store),
            len(self.src_vocab),
            len(self.tgt_vocab),
            store.path,
        )

    def read_train_split(self) -> Split:
        """The training split read, tokenised and encoded in memory, without the store (for
        aligning the corpus or building dictionaries from it). Needs :meth:`setup` first."""
        src, tgt = self.read_pairs(self.corpus.train)
        train = self._tokenize("train", src, tgt)
        train.src_tokens, train.tgt_tokens = length_filter(
            train.src_tokens,
            train.tgt_tokens,
            max_len=self.tokenisation.max_len,
            mode=self.tokenisation.length_mode,
        )
        self._encode(train)
        return train

    def setup_test(
        self, src_vocab: Vocab, tgt_vocab: Vocab, tokenizers: dict[str, Any] | None = None
    ) -> None:
        """Only the test sets, tokenised as in training and encoded with a model's vocabularies.

        The training data is not read, except for sentencepiece without ``tokenizers`` (the
        model's own ``src`` and ``tgt`` tokenisers): the pieces model is then trained on it
        again (or taken from the cache), and the vocabularies rebuilt must equal the model's.
        """
        tok = self.tokenisation
        if tok.tokenizer == "sentencepiece" and not tokenizers:
            self.setup("test")
            if self.src_vocab != src_vocab or self.tgt_vocab != tgt_vocab:
                raise DataError(
                    f"the vocabularies rebuilt from the training data differ from the model's; "
                    f"has the training data of {self.corpus.dataset} changed?"
                )
            return
        for side, lang in (("src", self.corpus.src_lang), ("tgt", self.corpus.tgt_lang)):
            self.tokenizers[side] = (tokenizers or {}).get(side) or make_tokenizer(
                tok.tokenizer, lang, **tok.tokenizer_opts
            )
        self.src_vocab, self.tgt_vocab = src_vocab, tgt_vocab
        for name, spec in self.test_spec.items():
            self.splits[name] = self._tokenize(name, *self.read_pairs(spec))
            self._encode(self.splits[name])

    # ------------------------------------------------------------------ loaders
    def _sampler(self, split: Split | TokenStore, train: bool):
        """The examples of ``split`` and their batches: bucketed and shuffled in training,
        sorted for evaluation (:class:`BucketBatchSampler`)."""
        if isinstance(split, TokenStore):
            examples, src_lens, tgt_lens = split, split.lengths["src"], split.lengths["tgt"]
        else:
            examples = split.examples()
            src_lens, tgt_lens = [len(e[1]) for e in examples], [len(e[2]) for e in examples]
        b = self.batching
        budget, unit = b.training_budget()
        sampler = BucketBatchSampler(
            src_lens,
            tgt_lens,
            batch_size=budget if train else b.eval_batch_size,
            batch_by=unit if train else "sentences",
            chunk_batches=b.chunk_batches,
            shuffle=train,
            seed=b.seed,
        )
        trainer = getattr(self, "trainer", None)
        if trainer is not None and trainer.world_size > 1:  # each rank its share (evaluation too)
            sampler.set_rank(trainer.global_rank, trainer.world_size)
        return examples, sampler

    def _loader(self, split: Split | TokenStore, train: bool) -> DataLoader:
        examples, sampler = self._sampler(split, train)
        # its own generator: creating an iterator draws a seed, which must not move the global
        # random state (dropout masks) between a checkpoint and the batches that follow it
        generator = torch.Generator().manual_seed(self.batching.seed)
        pad = self.pad_to if train else None
        loading = {
            "batch_sampler": sampler,
            "collate_fn": collate if pad is None else partial(padded_collate, pad=pad),
            "generator": generator,
            **self._workers(),
        }
        if not train:
            return DataLoader(examples, **loading)
        self._train_loader = ResumableLoader(
            examples, epoch=self._epoch, limit=self._limit_batches,
            accumulate=self._accumulate, **loading,
        )  # fmt: skip
        if self._resume_position is not None:
            self._train_loader.load_state_dict(self._resume_position)
            self._resume_position = None
        return self._train_loader

    def _workers(self) -> dict[str, Any]:
        """How the loaders load (:func:`~luong_lit.data.loading.workers.loader_workers`)."""
        trainer = getattr(self, "trainer", None)
        on_gpu = trainer is not None and trainer.strategy.root_device.type == "cuda"
        return loader_workers(self.batching.num_workers, on_gpu)

    def _epoch(self) -> int | None:
        """The trainer's current epoch (None outside a trainer: the sampler's own ``set_epoch``)."""
        trainer = getattr(self, "trainer", None)
        return None if trainer is None else int(trainer.current_epoch)

    def _accumulate(self) -> int:
        """The trainer's ``accumulate_grad_batches`` (1 outside a trainer)."""
        trainer = getattr(self, "trainer", None)
        return 1 if trainer is None else int(trainer.accumulate_grad_batches)

    def _limit_batches(self) -> int | float | None:
        """The trainer's ``limit_train_batches`` (None outside a trainer)."""
        trainer = getattr(self, "trainer", None)
        return None if trainer is None else trainer.limit_train_batches

    def state_dict(self) -> dict[str, Any]:
        """The training loader's position (the epoch served, its batches trained)."""
        return {} if self._train_loader is None else {"train": self._train_loader.state_dict()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """A checkpoint's position, for the training loader made next."""
        self._resume_position = state.get("train")

    def on_before_batch_transfer(self, batch, dataloader_idx: int):
        """A batch enters a step: in training, the loader counts it as trained (its position,
        which every checkpoint keeps)."""
        trainer = getattr(self, "trainer", None)
        if trainer is not None and trainer.training and self._train_loader is not None:
            self._train_loader.trained_one()
        return batch

    def train_dataloader(self) -> DataLoader:
        return self._loader(self.train_store, train=True)

    def val_dataloader(self) -> DataLoader:
        return self._loader(self.splits["dev"], train=False)

    def test_dataloader(self) -> list[DataLoader]:
        return [self._loader(self.splits[name], train=False) for name in self.test_spec]


def corpus_datamodule(data) -> TranslationDataModule:
    """The datamodule of a data config (``cfg.data``) for its training corpus alone, with no dev
    or test sets: what ``prepare`` builds a store from. A bad option is named ``data.<key>``."""
    from omegaconf import DictConfig, OmegaConf

    if isinstance(data, DictConfig):
        data = OmegaConf.to_container(data, resolve=True, throw_on_missing=False)
    kwargs = {k: v for k, v in dict(data).items() if not k.startswith("_")}
    try:
        return TranslationDataModule(**{**kwargs, "dev": None, "test": {}})
    except OptionError as err:
        raise err.within("data") from None
