"""The two passes of a store's preparation (:mod:`luong_lit.data.store.prepare`) on one chunk of
lines, in forked worker processes: pass 1 tokenises, filters by length and counts words
(:func:`tokenize_chunk`), pass 2 encodes the kept pairs with the vocabularies
(:func:`encode_chunk`); :func:`ordered_map` runs either over the chunks in order, never reading
far ahead. Each worker is set up once (:func:`init_tokenize`, :func:`init_encode`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np

from luong_lit.data.store.spec import CorpusSpec
from luong_lit.data.store.token_store import SIDES
from luong_lit.data.vocab import Vocab
from luong_lit.errors import DataError

_STATE: dict[str, Any] = {}


def init_tokenize(spec: CorpusSpec, protos: dict[str, bytes] | None) -> None:
    _STATE["tok"] = make_tokenizers(spec, protos)
    _STATE["spec"] = spec


def init_encode(vocabs: dict[str, list[str]], dtype: str) -> None:
    _STATE["stoi"] = {side: Vocab(itos).stoi for side, itos in vocabs.items()}
    _STATE["dtype"] = np.dtype(dtype)


def make_tokenizers(spec: CorpusSpec, protos: dict[str, bytes] | None = None) -> dict[str, Any]:
    """The ``src`` and ``tgt`` tokenisers of a corpus (sentencepiece ones from their models)."""
    from luong_lit.data.text.tokenize import SentencePieceTokenizer, make_tokenizer

    if spec.tokenizer == "sentencepiece":
        lower = bool(spec.tokenizer_opts.get("lowercase", False))
        return {side: SentencePieceTokenizer.from_proto(protos[side], lower) for side in SIDES}
    langs = {"src": spec.src_lang, "tgt": spec.tgt_lang}
    return {
        side: make_tokenizer(spec.tokenizer, langs[side], **spec.tokenizer_opts) for side in SIDES
    }


def length_filter(src: list[list[str]], tgt: list[list[str]], *, max_len: int | None, mode: str):
    """Drop empty pairs, then drop (``filter``, paper §4.1) or cut (``truncate``) long ones."""
    if mode not in ("filter", "truncate"):
        raise DataError(f"data.length_mode must be 'filter' or 'truncate', got {mode!r}")
    pairs = [(s, t) for s, t in zip(src, tgt) if s and t]
    if max_len:
        if mode == "filter":
            pairs = [(s, t) for s, t in pairs if len(s) <= max_len and len(t) <= max_len]
        else:
            pairs = [(s[:max_len], t[:max_len]) for s, t in pairs]
    return [p[0] for p in pairs], [p[1] for p in pairs]


def tokenize_chunk(chunk: tuple[list[str], list[str]]) -> dict[str, Any]:
    """Pass 1 on one chunk: tokens, the length filter, word counts, the kept pairs as text."""
    tok, spec = _STATE["tok"], _STATE["spec"]
    src = [tok["src"].tokenize(x) for x in chunk[0]]
    tgt = [tok["tgt"].tokenize(x) for x in chunk[1]]
    words = {"src": sum(map(len, src)), "tgt": sum(map(len, tgt))}
    src, tgt = length_filter(src, tgt, max_len=spec.max_len, mode=spec.length_mode)
    out: dict[str, Any] = {"read": len(chunk[0]), "kept": len(src), "words": words}
    for side, sents in (("src", src), ("tgt", tgt)):
        counts: Counter[str] = Counter()
        for s in sents:
            counts.update(s)
        out[side] = (counts, "".join(" ".join(s) + "\n" for s in sents))
    return out


def encode_chunk(chunk: tuple[list[str], list[str]]) -> dict[str, tuple[bytes, np.ndarray]]:
    """Pass 2 on one chunk of tokenised lines: the flat ids and the lengths of each side."""
    out = {}
    for side, lines in zip(SIDES, chunk):
        get, unk = _STATE["stoi"][side].get, 1
        sents = [line.split(" ") if line else [] for line in lines]
        flat = np.fromiter((get(w, unk) for s in sents for w in s), dtype=_STATE["dtype"])
        out[side] = (flat.tobytes(), np.fromiter(map(len, sents), dtype=np.int64, count=len(sents)))
    return out


def ordered_map(
    fn: Callable, items: Iterable, *, workers: int, init: tuple[Callable, tuple]
) -> Iterator:
    """``fn(item)`` for each item, in order, in ``workers`` forked processes (or in this one),
    each set up by ``init`` (an initialiser and its arguments), with at most two items per
    worker in flight: the input is never read far ahead."""
    initializer, initargs = init
    if workers <= 1:
        initializer(*initargs)
        yield from map(fn, items)
        return
    import multiprocessing as mp

    with mp.get_context("fork").Pool(workers, initializer, initargs) as pool:
        pending: list = []
        for item in items:
            pending.append(pool.apply_async(fn, (item,)))
            if len(pending) >= 2 * workers:
                yield pending.pop(0).get()
        for res in pending:
            yield res.get()
