"""Prepare a training corpus once: tokenise it in parallel, filter it by length, build the
vocabularies (or sentencepiece models) and write a :mod:`~luong_lit.data.store.token_store`.

The store is keyed by a fingerprint of everything that decides its content: the input files'
checksums, the direction, the tokeniser and its options, the vocabulary settings and the
length filter. :func:`ensure_store` opens it when it exists; otherwise it builds it under a file
lock, so that concurrent first uses (DDP ranks, the jobs of a sweep) build it once while the
others wait. A store is built in a temporary directory and renamed into place when complete,
so a killed preparation never leaves a store that a later run would use.

Lines are read in chunks and never held whole: pass 1 tokenises, filters and counts words in
worker processes and writes the kept pairs, tokenised, to temporary files; pass 2 encodes them
with the vocabularies built from the counts and appends the ids to the store's arrays.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from luong_lit.data.io import iter_parallel
from luong_lit.data.store.chunks import (
    encode_chunk,
    init_encode,
    init_tokenize,
    ordered_map,
    tokenize_chunk,
)
from luong_lit.data.store.spec import CorpusSpec, file_lock, store_root
from luong_lit.data.store.token_store import FORMAT, SIDES, TokenStore, id_dtype
from luong_lit.data.vocab import Vocab
from luong_lit.errors import DataError
from luong_lit.resources import cache_dir

CHUNK = 10_000  # pairs per work item


def ensure_store(
    spec: CorpusSpec, workers: int | None = None, progress: bool | None = None
) -> TokenStore:
    """The store of ``spec``: opened if it exists, else built once (under a file lock)."""
    final = store_root() / spec.fingerprint()
    if (final / "meta.json").is_file():
        return TokenStore(final)
    final.parent.mkdir(parents=True, exist_ok=True)
    with file_lock(final.with_name(final.name + ".lock")):
        if not (final / "meta.json").is_file():  # another process may have built it meanwhile
            build_store(spec, final, workers=workers, progress=progress)
    return TokenStore(final)


def default_workers() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def _line_chunks(spec: CorpusSpec) -> Iterator[tuple[list[str], list[str]]]:
    for src, tgt in spec.files:
        yield from iter_parallel(src, tgt, chunk=CHUNK, clean=spec.clean_control)


def _train_sentencepiece(spec: CorpusSpec) -> dict[str, bytes]:
    """Sentencepiece models trained on the corpus's raw lines (cached by their content)."""
    from luong_lit.data.text.tokenize import SentencePieceTokenizer

    lines: dict[str, list[str]] = {"src": [], "tgt": []}
    for src, tgt in _line_chunks(spec):
        lines["src"] += src
        lines["tgt"] += tgt
    out = {}
    for side in SIDES:
        tok = SentencePieceTokenizer(
            lines[side], cache_dir() / "sentencepiece", **spec.tokenizer_opts
        )
        out[side] = tok.proto()
    return out


def _progress(total: int | None, enabled: bool | None, desc: str):
    from tqdm.auto import tqdm

    return tqdm(
        total=total,
        unit=" pairs",
        unit_scale=True,
        desc=desc,
        disable=None if enabled is None else not enabled,
    )


def build_store(
    spec: CorpusSpec, final: Path, *, workers: int | None = None, progress: bool | None = None
) -> dict:
    """Build the store of ``spec`` into ``final`` (atomically); returns its ``meta.json``."""
    for stale in final.parent.glob(f".tmp-{final.name}-*"):  # a killed earlier build
        shutil.rmtree(stale, ignore_errors=True)
    tmp = final.parent / f".tmp-{final.name}-{os.getpid()}"
    tmp.mkdir(parents=True)
    try:
        meta = _build(spec, tmp, workers=workers or default_workers(), progress=progress)
        os.rename(tmp, final)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return meta


def _build(spec: CorpusSpec, tmp: Path, *, workers: int, progress: bool | None) -> dict:
    t0 = time.perf_counter()
    protos = _train_sentencepiece(spec) if spec.tokenizer == "sentencepiece" else None
    counts = {side: Counter() for side in SIDES}
    stats = {"pairs_read": 0, "pairs": 0, "words": {"src": 0, "tgt": 0}}
    with (
        open(tmp / "src.tok", "w", encoding="utf-8") as fs,
        open(tmp / "tgt.tok", "w", encoding="utf-8") as ft,
    ):
        with _progress(None, progress, "tokenising") as bar:
            init = (init_tokenize, (spec, protos))
            for res in ordered_map(tokenize_chunk, _line_chunks(spec), workers=workers, init=init):
                for side, fh in (("src", fs), ("tgt", ft)):
                    counts[side].update(res[side][0])
                    fh.write(res[side][1])
                    stats["words"][side] += res["words"][side]
                stats["pairs_read"] += res["read"]
                stats["pairs"] += res["kept"]
                bar.update(res["read"])
    stats["seconds_tokenise"] = round(time.perf_counter() - t0, 1)
    if not stats["pairs"]:
        raise DataError(f"no training pairs left after the length filter (max_len={spec.max_len})")
    if spec.given_vocab is None:
        vocabs = {
            side: Vocab.from_counts(counts[side], spec.vocab_size, spec.min_freq) for side in SIDES
        }
        _check_vocabularies(spec, vocabs, counts)
    else:  # a fine-tuned model's: the words outside it become <unk>, counted
        vocabs = {side: Vocab(words) for side, words in zip(SIDES, spec.given_vocab)}
        stats["outside_vocab"] = {
            side: sum(n for w, n in counts[side].items() if w not in vocabs[side].stoi)
            for side in SIDES
        }
    dtype = id_dtype(max(len(v) for v in vocabs.values()))
    sizes = _encode(
        tmp, vocabs, dtype=dtype, workers=workers, progress=progress, total=stats["pairs"]
    )
    for side in SIDES:
        (tmp / f"{side}.vocab").write_text(
            "".join(w + "\n" for w in vocabs[side].itos), encoding="utf-8"
        )
        (tmp / f"{side}.tok").unlink()
        if protos:
            (tmp / f"{side}.spm").write_bytes(protos[side])
    stats["vocab"] = {side: len(vocabs[side]) for side in SIDES}
    stats["seconds"] = round(time.perf_counter() - t0, 1)
    meta = {
        "format": FORMAT,
        "fingerprint": tmp.name.split("-")[1],
        "pairs": stats["pairs"],
        "dtype": dtype.name,
        "bytes": sizes,
        "stats": stats,
        "spec": {
            **spec.__dict__,
            "files": [list(f) for f in spec.files],
            "given_vocab": spec.vocab_key() if spec.given_vocab else None,
        },  # fmt: skip
    }
    (tmp / "meta.json").write_text(json.dumps(meta, indent=1), encoding="utf-8")
    return meta


def _check_vocabularies(
    spec: CorpusSpec, vocabs: dict[str, Vocab], counts: dict[str, Counter]
) -> None:
    """A vocabulary of the four special symbols only is never what a user wants."""
    langs = {"src": spec.src_lang, "tgt": spec.tgt_lang}
    for side in SIDES:
        if len(vocabs[side]) <= 4:
            most = max(counts[side].values(), default=0)
            name = "source" if side == "src" else "target"
            raise DataError(
                f"the {name} vocabulary ({langs[side]}) would hold no words: data.min_freq="
                f"{spec.min_freq} is above every word's count (the most frequent word occurs "
                f"{most} times in the training data); lower data.min_freq"
            )


def _encode(
    tmp: Path, vocabs: dict[str, Vocab], *, dtype: np.dtype, workers: int, progress, total: int
) -> dict[str, int]:
    """Pass 2: the ids and offsets files of both sides; returns the files' sizes in bytes."""
    lengths: dict[str, list[np.ndarray]] = {side: [] for side in SIDES}
    files = {side: open(tmp / f"{side}.ids", "wb") for side in SIDES}
    try:
        chunks = iter_parallel(tmp / "src.tok", tmp / "tgt.tok", chunk=CHUNK)
        init = (init_encode, ({s: v.itos for s, v in vocabs.items()}, dtype.name))
        with _progress(total, progress, "encoding") as bar:
            for res in ordered_map(encode_chunk, chunks, workers=workers, init=init):
                for side in SIDES:
                    files[side].write(res[side][0])
                    lengths[side].append(res[side][1])
                bar.update(len(res["src"][1]))
    finally:
        for fh in files.values():
            fh.close()
    sizes = {}
    for side in SIDES:
        offsets = np.zeros(total + 1, dtype=np.int64)
        np.cumsum(np.concatenate(lengths[side]), out=offsets[1:])
        offsets.tofile(tmp / f"{side}.offsets")
        sizes[f"{side}.ids"] = (tmp / f"{side}.ids").stat().st_size
        sizes[f"{side}.offsets"] = offsets.nbytes
    return sizes
