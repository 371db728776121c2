"""Reading text files with errors that name the file and the line."""

from __future__ import annotations

import gzip
from collections.abc import Iterable
from pathlib import Path

from luong_lit.errors import DataError

__all__ = ["DataError", "decode_lines", "read_lines", "read_parallel", "text_lines"]


def _open_binary(path: Path):
    if path.suffix == ".gz":
        return gzip.open(path, "rb")
    return open(path, "rb")


def decode_lines(raw_lines: Iterable[bytes], name: str) -> list[str]:
    """UTF-8 lines without terminators; a bad byte raises a DataError naming ``name:line``."""
    lines = []
    for lineno, raw in enumerate(raw_lines, start=1):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as err:
            bad = raw[err.start : err.start + 1].hex()
            raise DataError(
                f"{name}:{lineno}: not valid UTF-8 (byte 0x{bad} at column {err.start + 1})"
            ) from None
        lines.append(text.rstrip("\r\n"))
    return lines


def text_lines(text: str) -> list[str]:
    """Lines of ``text`` split at ``\n`` only, as files are read, without line terminators.

    ``str.splitlines`` would also split at U+2028, U+0085, form feeds and other separators,
    which occur inside sentences of web-crawled corpora and would shift one side of a
    parallel corpus against the other.
    """
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line.rstrip("\r") for line in lines]


def read_lines(path: str | Path, allow_empty_file: bool = False) -> list[str]:
    """All lines of a UTF-8 text file (plain or ``.gz``), without line terminators.

    Raises:
        DataError: the file is missing or empty, is not valid gzip, or a line is not UTF-8.
    """
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: file does not exist")
    lines: list[str] = []
    try:
        with _open_binary(path) as fh:
            lines = decode_lines(fh, str(path))
    except (OSError, EOFError) as err:  # e.g. a truncated or fake .gz file
        raise DataError(f"{path}: cannot be read: {err}") from None
    if not lines and not allow_empty_file:
        raise DataError(f"{path}: file is empty")
    return lines


def read_parallel(src_path: str | Path, tgt_path: str | Path) -> tuple[list[str], list[str]]:
    """Two line-aligned files; their line counts must match."""
    src, tgt = read_lines(src_path), read_lines(tgt_path)
    if len(src) != len(tgt):
        short, n = (src_path, len(src)) if len(src) < len(tgt) else (tgt_path, len(tgt))
        raise DataError(
            f"parallel files differ in length: {src_path} has {len(src)} lines but {tgt_path} "
            f"has {len(tgt)}; {short} ends after line {n}"
        )
    return src, tgt
