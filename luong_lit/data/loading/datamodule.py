"""The LightningDataModule: named corpora or files → a prepared store → batches.

Training reads its batches from the memory-mapped store of :mod:`luong_lit.data.store.prepare`
(prepared on first use, then opened by every later run with the same settings); the dev and
test sets, a few thousand sentences, are read and tokenised at every start.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import lightning as L
import torch
from torch.utils.data import DataLoader

from luong_lit.data.io import DataError
from luong_lit.data.loading.batching import BucketBatchSampler, collate
from luong_lit.data.loading.loader import ResumableLoader
from luong_lit.data.loading.splits import Split, read_pairs, split_files, tokenized_split
from luong_lit.data.sources.fetch import mirror_dir
from luong_lit.data.sources.registry import DATASETS
from luong_lit.data.store.prepare import ensure_store, length_filter, make_tokenizers
from luong_lit.data.store.spec import CorpusSpec
from luong_lit.data.store.token_store import SIDES, TokenStore
from luong_lit.data.text.preprocess import Preprocessing
from luong_lit.data.text.tokenize import make_tokenizer
from luong_lit.data.vocab import Vocab
from luong_lit.errors import ConfigError
from luong_lit.validate import OptionError, integer

log = logging.getLogger(__name__)


def _check_numbers(args: Mapping[str, Any]) -> None:
    """The numeric options of :class:`TranslationDataModule`, each checked once here."""
    for name in ("batch_size", "eval_batch_size", "min_freq", "chunk_batches"):
        integer(name, args[name], 1)
    for name in ("max_len", "vocab_size", "prepare_workers"):
        integer(name, args[name], 1, nullable=True)
    integer("num_workers", args["num_workers"], 0)


class TranslationDataModule(L.LightningDataModule):
    """Parallel data for training and evaluation.

    Args:
        dataset: ``multi30k``, ``wmt14_ende``, ``iwslt14_deen`` or ``files``.
        src_lang, tgt_lang: the direction; every named dataset works both ways.
        train, dev: a split name, a list of corpus names (concatenated), or for ``files`` a
            mapping ``{src: path, tgt: path}``.
        test: a mapping from a test-set name to a split spec as above.
        variant: ``tok`` or ``raw`` (Multi30k only).
        tokenizer: ``none`` (pre-tokenised), ``moses`` or ``sentencepiece``; ``tokenizer_opts``
            are passed on (``aggressive``, ``escape``, ``lowercase``, ``model_type``,
            ``vocab_size``).
        vocab_size, min_freq: keep the top-K words (paper: 50K) and/or words with count ≥ min_freq.
        max_len, length_mode: drop (``filter``) or cut (``truncate``) training pairs over max_len.
        batch_size, batch_by: sentences (paper: 128) or target tokens per batch.
        mirror: a local directory laid out like the official data (else ``LUONG_LIT_DATA``).
        prepare_workers: processes that tokenise the training corpus when its store is
            prepared (default: one per core).
        clean_control: replace control characters (other than tab) in the text by spaces;
            by default a line holding one is an error that names the file and line.
    """

    def __init__(
        self,
        dataset: str = "multi30k",
        src_lang: str = "en",
        tgt_lang: str = "de",
        train: Any = "train",
        dev: Any = "val",
        test: dict[str, Any] | None = None,
        variant: str = "tok",
        tokenizer: str = "none",
        tokenizer_opts: dict[str, Any] | None = None,
        vocab_size: int | None = 50000,
        min_freq: int = 1,
        max_len: int | None = 50,
        length_mode: str = "filter",
        batch_size: int = 128,
        batch_by: str = "sentences",
        eval_batch_size: int = 128,
        chunk_batches: int = 100,
        seed: int = 1234,
        mirror: str | None = None,
        num_workers: int = 0,
        prepare_workers: int | None = None,
        clean_control: bool = False,
        preprocess: Mapping | None = None,
        recase_from: str | None = None,
    ) -> None:
        """``preprocess`` and ``recase_from`` describe the text for ``translate`` (see
        :mod:`luong_lit.data.text.user_text`); checked here, kept in the checkpoint."""
        super().__init__()
        _check_numbers(locals())
        Preprocessing.from_dict(preprocess)  # a wrong step name fails now, not at translation
        if dataset not in DATASETS:
            raise DataError(f"unknown dataset {dataset!r}; choose one of {', '.join(DATASETS)}")
        self.cfg = {
            "dataset": dataset,
            "src_lang": src_lang,
            "tgt_lang": tgt_lang,
            "variant": variant,
        }
        if test is not None and not isinstance(test, Mapping):
            raise ConfigError(
                f"data.test must map test-set names to splits ({{name: {{src: PATH, tgt: PATH}}}}"
                f" or {{name: SPLIT}}), got {test!r}"
            )
        self.train_spec, self.dev_spec, self.test_spec = train, dev, dict(test or {})
        self.tokenizer_kind, self.tokenizer_opts = tokenizer, dict(tokenizer_opts or {})
        self.vocab_size, self.min_freq = vocab_size, min_freq
        self.max_len, self.length_mode = max_len, length_mode
        self.batch_size, self.batch_by, self.eval_batch_size = batch_size, batch_by, eval_batch_size
        self.chunk_batches, self.seed, self.num_workers = chunk_batches, seed, num_workers
        self.mirror = mirror_dir(mirror)
        self.prepare_workers, self.clean_control = prepare_workers, clean_control
        self.train_store: TokenStore | None = None
        self.splits: dict[str, Split] = {}
        self.src_vocab: Vocab | None = None
        self.tgt_vocab: Vocab | None = None
        self.tokenizers: dict[str, Any] = {}
        self._train_loader: ResumableLoader | None = None  # its position goes into checkpoints
        self._resume_position: dict[str, int] | None = None  # a checkpoint's, for the next loader

    # ------------------------------------------------------------------ reading
    def _paths(self, spec: Any) -> list[tuple[Path, Path]]:
        """(src, tgt) file pairs for a split spec."""
        return split_files(spec, **self.cfg, mirror=self.mirror)

    def read_pairs(self, spec: Any) -> tuple[list[str], list[str]]:
        """The source and target lines of a split spec (``train``, ``cfg.data.dev``, a list of
        corpora, ``{src: PATH, tgt: PATH}``), read as training reads them: checked, untokenised."""
        return read_pairs(self._paths(spec), self.clean_control)

    def _tokenize(self, name: str, src: Sequence[str], tgt: Sequence[str]) -> Split:
        keep_text = name != "train" and self.tokenizer_kind != "none"
        return tokenized_split(name, src, tgt, self.tokenizers, keep_text)

    def _encode(self, split: Split) -> None:
        split.encode(self.src_vocab, self.tgt_vocab)

    # ------------------------------------------------------------------ setup
    def corpus_spec(self) -> CorpusSpec:
        """What decides the training store: files, direction, tokeniser, vocabulary, filter."""
        return CorpusSpec(
            files=tuple((str(s), str(t)) for s, t in self._paths(self.train_spec)),
            src_lang=self.cfg["src_lang"],
            tgt_lang=self.cfg["tgt_lang"],
            tokenizer=self.tokenizer_kind,
            tokenizer_opts=self.tokenizer_opts,
            vocab_size=self.vocab_size,
            min_freq=self.min_freq,
            max_len=self.max_len,
            length_mode=self.length_mode,
            clean_control=self.clean_control,
        )

    def setup(self, stage: str | None = None) -> None:
        if self.src_vocab is not None:
            return
        self.train_store = ensure_store(self.corpus_spec(), self.prepare_workers)
        store = self.train_store
        self.src_vocab, self.tgt_vocab = store.vocabs["src"], store.vocabs["tgt"]
        protos = {side: store.sentencepiece(side) for side in SIDES}
        self.tokenizers = make_tokenizers(self.corpus_spec(), protos)
        self.splits = {"dev": self._tokenize("dev", *self.read_pairs(self.dev_spec))}
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
        src, tgt = self.read_pairs(self.train_spec)
        train = self._tokenize("train", src, tgt)
        train.src_tokens, train.tgt_tokens = length_filter(
            train.src_tokens, train.tgt_tokens, self.max_len, self.length_mode
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
        if self.tokenizer_kind == "sentencepiece" and not tokenizers:
            self.setup("test")
            if self.src_vocab != src_vocab or self.tgt_vocab != tgt_vocab:
                raise DataError(
                    f"the vocabularies rebuilt from the training data differ from the model's; "
                    f"has the training data of {self.cfg['dataset']} changed?"
                )
            return
        for side, lang in (("src", self.cfg["src_lang"]), ("tgt", self.cfg["tgt_lang"])):
            self.tokenizers[side] = (tokenizers or {}).get(side) or make_tokenizer(
                self.tokenizer_kind, lang, **self.tokenizer_opts
            )
        self.src_vocab, self.tgt_vocab = src_vocab, tgt_vocab
        for name, spec in self.test_spec.items():
            self.splits[name] = self._tokenize(name, *self.read_pairs(spec))
            self._encode(self.splits[name])

    # ------------------------------------------------------------------ loaders
    def _loader(self, split: Split | TokenStore, train: bool) -> DataLoader:
        if isinstance(split, TokenStore):
            examples, src_lens, tgt_lens = split, split.lengths["src"], split.lengths["tgt"]
        else:
            examples = split.examples()
            src_lens, tgt_lens = [len(e[1]) for e in examples], [len(e[2]) for e in examples]
        sampler = BucketBatchSampler(
            src_lens,
            tgt_lens,
            self.batch_size if train else self.eval_batch_size,
            self.batch_by if train else "sentences",
            self.chunk_batches,
            shuffle=train,
            seed=self.seed,
        )
        trainer = getattr(self, "trainer", None)
        if train and trainer is not None and trainer.world_size > 1:
            sampler.set_rank(trainer.global_rank, trainer.world_size)
        # its own generator: creating an iterator draws a seed, which must not move the global
        # random state (dropout masks) between a checkpoint and the batches that follow it
        generator = torch.Generator().manual_seed(self.seed)
        if not train:
            return DataLoader(
                examples,
                batch_sampler=sampler,
                collate_fn=collate,
                num_workers=self.num_workers,
                generator=generator,
            )
        self._train_loader = ResumableLoader(
            examples,
            batch_sampler=sampler,
            collate_fn=collate,
            num_workers=self.num_workers,
            epoch=self._epoch,
            limit=self._limit_batches,
            generator=generator,
        )
        if self._resume_position is not None:
            self._train_loader.load_state_dict(self._resume_position)
            self._resume_position = None
        return self._train_loader

    def _epoch(self) -> int | None:
        """The trainer's current epoch (None outside a trainer: the sampler's own ``set_epoch``)."""
        trainer = getattr(self, "trainer", None)
        return None if trainer is None else int(trainer.current_epoch)

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
