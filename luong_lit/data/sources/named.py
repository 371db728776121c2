"""Corpora by name: what ``data.dataset`` may choose, and where each finds its files.

A named corpus is a function ``source(split, lang, variant) -> Source``: the file of one side
of one split (:class:`~luong_lit.data.sources.fetch.Source`: its place in a mirror or an
absolute path, and its official download, if any). :func:`register_corpus` adds one; the kit's
own (:mod:`.registry`: Multi30k, WMT'14, IWSLT'14) are added the same way. ``files`` is the
one dataset without a name: its splits give the paths themselves.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from luong_lit.data.io import DataError
from luong_lit.data.sources.fetch import Source, mirror_dir, resolve
from luong_lit.registry import Registry

FILES = "files"  # data.dataset of parallel files named by path
CORPORA = Registry("corpus")


@dataclass(frozen=True)
class NamedCorpus:
    """A corpus that ``data.dataset`` names.

    Attributes:
        source: ``source(split, lang, variant) -> Source``; a :class:`DataError` for a split,
            a language or a variant it does not have.
        label: how reports name it (``Multi30k``).
        splits, variants: what it has, listed by :func:`registry` (each split in each variant).
        cased: ``cased(split, lang) -> Source``, the cased text of a corpus released
            lowercased: ``translate`` learns from it to restore casing.
    """

    source: Callable[[str, str, str], Source]
    label: str
    splits: tuple[str, ...] = ()
    variants: tuple[str, ...] = ("tok",)
    cased: Callable[[str, str], Source] | None = None


def register_corpus(
    name: str,
    source: Callable[[str, str, str], Source],
    *,
    label: str | None = None,
    splits: Sequence[str] = (),
    variants: Sequence[str] = ("tok",),
    cased: Callable[[str, str], Source] | None = None,
) -> NamedCorpus:
    """Name a corpus: ``data.dataset=NAME`` then reads ``data.train``, ``data.dev`` and
    ``data.test`` as its split names (:class:`NamedCorpus`)."""
    corpus = NamedCorpus(source, label or name, tuple(splits), tuple(variants), cased)
    CORPORA.add(name, corpus)
    return corpus


def dataset_names() -> list[str]:
    """Every name ``data.dataset`` may take: the named corpora, then ``files``."""
    return [*CORPORA, FILES]


def corpus_source(dataset: str, split: str, lang: str, variant: str = "tok") -> Source:
    """The file of one side of a corpus. ``split`` may name another dataset's corpus as
    ``DATASET:SPLIT`` (``multi30k:train`` in a WMT training list), read in the same variant
    where that dataset has it (Multi30k's raw text beside raw WMT text)."""
    if ":" in split:
        dataset, split = split.split(":", 1)
        if dataset not in CORPORA:
            raise DataError(
                f"corpus {dataset}:{split} names no dataset; choose one of {', '.join(CORPORA)}"
            )
    if dataset not in CORPORA:
        raise DataError(f"unknown dataset {dataset!r}; choose one of {', '.join(dataset_names())}")
    return CORPORA[dataset].source(split, lang, variant)


def registry() -> list[tuple[str, str, str]]:
    """Every ``(dataset, split, variant)`` of the named datasets; both languages of each."""
    return [
        (name, split, variant)
        for name, corpus in CORPORA.items()
        for split in corpus.splits
        for variant in corpus.variants
    ]


def corpus_name(dataset: str | None) -> str:
    """How reports name a dataset: its label (``Multi30k``), else the name itself (``files``)."""
    corpus = CORPORA.get(str(dataset))
    return corpus.label if corpus is not None else str(dataset or FILES)


def cased_target_file(data: Mapping) -> Path | None:
    """The cased target side of a data config's training text, to learn a recaser from:
    ``data.recase_from``, or the cased release of a named corpus that has one (Multi30k)."""
    if data.get("recase_from"):
        return Path(str(data["recase_from"])).expanduser()
    corpus = CORPORA.get(str(data.get("dataset")))
    if corpus is None or corpus.cased is None:
        return None
    source = corpus.cased(str(data.get("train", "train")), data["tgt_lang"])
    return resolve(source, mirror_dir(data.get("mirror")))
