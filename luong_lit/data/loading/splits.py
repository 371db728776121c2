"""A split of parallel text (train, dev, a test set): where its files are, read and tokenised
as training reads them, and encoded with a model's vocabularies."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from luong_lit.data.io import DataError, read_parallel
from luong_lit.data.loading.options import Corpus
from luong_lit.data.sources.fetch import resolve
from luong_lit.data.sources.registry import corpus_source


@dataclass
class Split:
    """One evaluation or training split, kept as text, tokens and ids."""

    name: str
    src_tokens: list[list[str]]
    tgt_tokens: list[list[str]]
    src_ids: list[list[int]] = field(default_factory=list)
    tgt_ids: list[list[int]] = field(default_factory=list)
    # the raw target lines, where the text was tokenised here
    tgt_text: list[str] = field(default_factory=list)

    def encode(self, src_vocab, tgt_vocab) -> None:
        """Fill in the ids of both sides."""
        self.src_ids = [src_vocab.encode(s) for s in self.src_tokens]
        self.tgt_ids = [tgt_vocab.encode(t) for t in self.tgt_tokens]

    def examples(self) -> list[tuple[int, list[int], list[int]]]:
        """``(index, src, tgt)`` for pairs with a non-empty source (what a batch can hold)."""
        return [(i, s, t) for i, (s, t) in enumerate(zip(self.src_ids, self.tgt_ids)) if s]


def split_files(spec: Any, *, corpus: Corpus, mirror: Path | None) -> list[tuple[Path, Path]]:
    """(src, tgt) file pairs of a split spec: a split name or a list of them (a named corpus of
    ``corpus.dataset``, from ``mirror`` or its download), or ``{src: PATH, tgt: PATH}``
    (``dataset=files``)."""
    if corpus.dataset == "files":
        if not hasattr(spec, "get") or not spec.get("src") or not spec.get("tgt"):
            raise DataError(
                f"dataset=files needs each split as {{src: PATH, tgt: PATH}}, got {spec!r}"
            )
        return [(Path(spec["src"]), Path(spec["tgt"]))]
    names = [spec] if isinstance(spec, str) else list(spec)
    return [
        tuple(
            resolve(corpus_source(corpus.dataset, n, lang, variant=corpus.variant), mirror)
            for lang in (corpus.src_lang, corpus.tgt_lang)
        )
        for n in names
    ]


def read_pairs(files: list[tuple[Path, Path]], clean_control: bool) -> tuple[list[str], list[str]]:
    """The source and target lines of ``files``, concatenated: checked, untokenised."""
    src, tgt = [], []
    for sp, tp in files:
        s, t = read_parallel(sp, tp, clean_control)
        src += s
        tgt += t
    return src, tgt


def tokenized_split(
    name: str, src: Sequence[str], tgt: Sequence[str], *, tokenizers: dict, keep_text: bool
) -> Split:
    """A split of ``src`` and ``tgt`` lines tokenised by ``tokenizers["src"]`` and ``["tgt"]``
    (``keep_text``: the target lines are kept too, as references for detokenised BLEU)."""
    ts, tt = tokenizers["src"], tokenizers["tgt"]
    return Split(
        name,
        [ts.tokenize(x) for x in src],
        [tt.tokenize(x) for x in tgt],
        tgt_text=list(tgt) if keep_text else [],
    )
