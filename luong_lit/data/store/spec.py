"""What decides a prepared store's content, and where stores live.

A store is keyed by a fingerprint of everything that decides it: the input files' checksums,
the direction, the tokeniser and its options, the vocabulary settings and the length filter
(:class:`CorpusSpec`). Checksums are remembered per version of a file, so a large corpus is
read for its checksum once.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from luong_lit.data.store.token_store import FORMAT
from luong_lit.errors import DataError
from luong_lit.resources import cache_dir

PAPER_COUNTS = {"pairs": 4.5e6, "en": 116e6, "de": 110e6}  # the paper's WMT'14 training data, §4.1


@dataclass(frozen=True)
class CorpusSpec:
    """Everything that decides a store's content (the files by their checksums)."""

    files: tuple[tuple[str, str], ...]  # (source, target) file pairs, concatenated
    src_lang: str
    tgt_lang: str
    tokenizer: str = "none"
    tokenizer_opts: dict[str, Any] = field(default_factory=dict, hash=False)
    vocab_size: int | None = None
    min_freq: int = 1
    max_len: int | None = None
    length_mode: str = "filter"
    clean_control: bool = False  # control characters replaced by spaces instead of refused
    # the vocabularies to encode with (a fine-tuned model's, its checkpoint's), instead of
    # those the counts make: (source words, target words)
    given_vocab: tuple[tuple[str, ...], tuple[str, ...]] | None = field(default=None, repr=False)

    def vocab_key(self) -> list:
        """The vocabulary settings, or a digest of the given vocabularies."""
        if self.given_vocab is None:
            return [self.vocab_size, self.min_freq]
        words = "\n".join("\t".join(side) for side in self.given_vocab)
        return ["given", hashlib.sha256(words.encode()).hexdigest()[:16]]

    def fingerprint(self) -> str:
        parts = {
            "format": FORMAT,
            "files": [[file_digest(s), file_digest(t)] for s, t in self.files],
            "direction": [self.src_lang, self.tgt_lang],
            "tokenizer": [self.tokenizer, dict(sorted(self.tokenizer_opts.items()))],
            "vocab": self.vocab_key(),
            "length_filter": [self.max_len, self.length_mode],
            "clean_control": self.clean_control,
        }
        return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:24]


def file_digest(path: str | Path) -> str:
    """SHA-256 of a file's bytes, remembered per version of the file (path, size, mtime)."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: file does not exist")
    st = path.stat()
    key = hashlib.sha256(f"{path.resolve()}|{st.st_size}|{st.st_mtime_ns}".encode()).hexdigest()
    memo = cache_dir() / "digests" / key[:32]
    if memo.is_file():
        return memo.read_text().strip()
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 22), b""):
            h.update(block)
    with contextlib.suppress(OSError):
        memo.parent.mkdir(parents=True, exist_ok=True)
        memo.write_text(h.hexdigest())
    return h.hexdigest()


def store_root() -> Path:
    return cache_dir() / "stores"


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """An exclusive lock on ``path`` held for the block (waits while another process holds it)."""
    try:
        import fcntl
    except ImportError:  # no fcntl (Windows): concurrent first uses may build twice
        yield
        return
    with open(path, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)
