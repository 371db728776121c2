"""The data of a trained model: its test sets and tokenisers, as its training data was read.

A checkpoint keeps its data description (``meta.data`` of its
:class:`~luong_lit.checkpoint.meta.CheckpointMeta`, a
:class:`~luong_lit.data.loading.options.DataOptions`); these functions rebuild the model's
datamodule from it, so that ``evaluate``, ``translate``, ``align`` and the analysis read test
sets and raw text exactly as training did.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple, Protocol

from luong_lit.data.loading.options import DataOptions
from luong_lit.data.text.model_text import RecipeText, TokenizedText
from luong_lit.data.text.preprocess import Preprocessing, recipe_for
from luong_lit.data.text.recase import Recaser
from luong_lit.data.text.tokenize import WhitespaceTokenizer, make_tokenizer
from luong_lit.errors import CheckpointError, ConfigError, DataError


class ModelMeta(Protocol):
    """What these functions read of a checkpoint's description: the fields of
    :class:`~luong_lit.checkpoint.meta.CheckpointMeta` about its text (the data layer reads
    them without importing the checkpoints' layer)."""

    @property
    def data(self) -> DataOptions: ...

    @property
    def preprocess(self) -> Preprocessing | None: ...

    @property
    def recaser(self) -> Mapping[str, str] | None: ...

    @property
    def sentencepiece(self) -> Mapping[str, bytes] | None: ...


def stored_tokenizers(meta: ModelMeta) -> dict | None:
    """The sentencepiece tokenisers a checkpoint keeps (``src``, ``tgt``), or None."""
    from luong_lit.data.text.tokenize import SentencePieceTokenizer

    protos = meta.sentencepiece
    if not protos:
        return None
    lowercase = meta.data.tokenisation.lowercase
    try:
        return {
            side: SentencePieceTokenizer.from_proto(protos[side], lowercase)
            for side in ("src", "tgt")
        }
    except (KeyError, TypeError, ValueError) as err:
        raise CheckpointError(
            f"the checkpoint's sentencepiece models are damaged ({err})"
        ) from None


def datamodule_for(meta: ModelMeta, tests: dict | None = None, setup: bool = True):
    """The model's own dataset, tokenised as in training, with the given test sets."""
    from luong_lit.data.loading.datamodule import TranslationDataModule

    cfg = {k: v for k, v in meta.data.config.items() if not k.startswith("_")}
    cfg["mirror"] = None  # this machine's LUONG_LIT_DATA, not the training machine's
    cfg["test"] = dict(tests or {})
    try:
        dm = TranslationDataModule(**cfg)
    except DataError:
        raise
    except (TypeError, ValueError) as err:
        raise CheckpointError(f"the checkpoint's data description is damaged ({err})") from None
    if setup:
        dm.setup("test")
    return dm


class TestSet(NamedTuple):
    """A test split of a model's dataset, with what scoring it needs."""

    split: Any  # luong_lit.data.loading.splits.Split
    lang: str  # the target language (for detokenisation)
    tokenizer: Any  # the target-side tokeniser of training
    raw_refs: list[str] | None  # untokenised references, where the data was tokenised here


def load_split(meta: ModelMeta, name: str, src_vocab, tgt_vocab) -> TestSet:
    """The test split ``name`` of the model's dataset, tokenised as in training and encoded with
    the model's vocabularies. The training data is not read (except for a sentencepiece model
    whose checkpoint does not keep its pieces model)."""
    corpus = meta.data.corpus
    dm = datamodule_for(meta, {name: corpus.test.get(name, name)}, setup=False)
    dm.setup_test(src_vocab, tgt_vocab, stored_tokenizers(meta))
    split = dm.splits[name]
    lowercased = meta.data.tokenisation.lowercase
    raw = split.tgt_text if split.tgt_text and not lowercased else None
    return TestSet(split, corpus.tgt_lang, dm.tokenizers["tgt"], raw)


def test_set_names(meta: ModelMeta) -> list[str]:
    """The test sets the model's training config named (``data.test``), in its order."""
    return list(meta.data.corpus.test)


def _recipe(meta: ModelMeta) -> Preprocessing:
    """The checkpoint's recipe; a checkpoint from before recipes were kept: its corpus's (by
    the data config as stored: a corpus it does not name has none)."""
    if meta.preprocess is not None:
        return meta.preprocess
    try:
        return recipe_for(meta.data.config)
    except ConfigError as err:
        raise CheckpointError(str(err)) from None


def model_recipe(meta: ModelMeta) -> Preprocessing:
    """How the model's training text was made from raw text (identity if not known)."""
    recipe = _recipe(meta)
    if meta.data.tokenisation.lowercase:
        recipe = Preprocessing(**{**recipe.to_dict(), "lowercase": True})
    return recipe


def _recaser(meta: ModelMeta, recipe: Preprocessing) -> Recaser | None:
    """The checkpoint's recaser; for an older checkpoint, learned now if its data is at hand."""
    if meta.recaser:
        return Recaser(meta.recaser)
    if meta.preprocess is not None or not recipe.lowercase:
        return None
    from luong_lit.data.sources.registry import cased_target_file
    from luong_lit.data.text.user_text import user_text

    data = meta.data.config  # the data config as training read it
    try:
        forms = user_text(data, cased_target_file(data)).get("recaser")
    except (DataError, OSError):
        return None
    return Recaser(forms) if forms else None


def model_text(meta: ModelMeta, pretokenized: bool = False, src_vocab=None, tgt_vocab=None):
    """How text reaches the model of ``meta`` and leaves it, as its training data was read
    (:mod:`luong_lit.data.text.model_text`); ``pretokenized``: input and output stay tokens.

    Sentencepiece models come from the checkpoint; for a checkpoint without them, they are
    rebuilt from the training data (or taken from the cache), which must still give the
    model's vocabularies.
    """
    tok, corpus = meta.data.tokenisation, meta.data.corpus
    kind, opts = tok.tokenizer, dict(tok.tokenizer_opts)
    src_lang, tgt_lang = corpus.src_lang, corpus.tgt_lang
    if kind == "none" and not pretokenized:
        recipe = _recipe(meta)
        if not recipe.identity:
            return RecipeText(recipe, src_lang, tgt_lang, _recaser(meta, recipe))
    if pretokenized or kind == "none":
        lower = tok.lowercase
        return TokenizedText(WhitespaceTokenizer(lower), WhitespaceTokenizer(lower))
    if kind == "sentencepiece":
        stored = stored_tokenizers(meta)
        if stored is None:  # an older checkpoint: rebuild the pieces model
            dm = datamodule_for(meta, setup=False)
            dm.setup_test(src_vocab, tgt_vocab)
            stored = dm.tokenizers
        return TokenizedText(stored["src"], stored["tgt"])
    try:
        src, tgt = make_tokenizer(kind, src_lang, **opts), make_tokenizer(kind, tgt_lang, **opts)
    except (TypeError, ValueError) as err:
        raise CheckpointError(
            f"the checkpoint's tokeniser description is damaged ({err})"
        ) from None
    return TokenizedText(src, tgt)
