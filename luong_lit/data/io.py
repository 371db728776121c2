"""Reading text files with errors that name the file and the line."""

from __future__ import annotations

import gzip
import re
from collections.abc import Iterable, Iterator
from itertools import islice
from pathlib import Path

from luong_lit.errors import DataError

__all__ = [
    "DataError",
    "decode_lines",
    "iter_parallel",
    "read_lines",
    "read_parallel",
    "text_lines",
    "user_line",
]


def _open_binary(path: Path):
    if path.suffix == ".gz":
        return gzip.open(path, "rb")
    return open(path, "rb")


#: Control characters other than tab (line ends are stripped first): in text, a broken file.
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f]")
#: In text a user gives to translate (``translate``, ``serve``): characters that separate words
#: as a space does (tab, vertical tab, form feed, next line, line and paragraph separators, zero
#: width space) count as spaces; any other control character, C1 ones included, is named.
SPACE_LIKE = re.compile("[\t\x0b\x0c\x85\u2028\u2029\u200b]")
USER_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


def user_line(text: str, where: str) -> str:
    """A line of a user's text with :data:`SPACE_LIKE` characters as spaces; another control
    character raises a DataError that names ``where`` (``file:line``, ``sentence 3``), and so does
    a line break (the API and the server take one sentence per item, as a file has per line)."""
    if "\n" in text or "\r" in text:
        raise DataError(f"{where} holds a line break; give one sentence per item")
    text = SPACE_LIKE.sub(" ", text)
    found = USER_CONTROL.search(text)
    if found is not None:
        raise DataError(
            f"{where}: control character U+{ord(found.group()):04X} at column "
            f"{found.start() + 1}; text to translate may hold spaces, tabs and line separators, "
            "not other control characters"
        )
    return text


def _control(text: str, name: str, lineno: int, clean: bool) -> str:
    found = CONTROL.search(text)
    if found is None:
        return text
    if clean:
        return CONTROL.sub(" ", text)
    raise DataError(
        f"{name}:{lineno}: control character U+{ord(found.group()):04X} at column "
        f"{found.start() + 1}; text files rarely hold one unless they are broken (for training "
        "data, data.clean_control=true replaces them by spaces)"
    )


def decode_lines(
    raw_lines: Iterable[bytes], name: str, start: int = 1, clean: bool = False, user=False
) -> list[str]:
    """UTF-8 lines without terminators; a bad byte or a control character (other than tab)
    raises a DataError naming ``name:line`` (``start``: the number of the first line;
    ``clean``: replace control characters by spaces instead; ``user``: text to translate,
    read by :func:`user_line`)."""
    lines = []
    for lineno, raw in enumerate(raw_lines, start=start):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as err:
            bad = raw[err.start : err.start + 1].hex()
            raise DataError(
                f"{name}:{lineno}: not valid UTF-8 (byte 0x{bad} at column {err.start + 1})"
            ) from None
        text = text.rstrip("\r\n")
        lines.append(
            user_line(text, f"{name}:{lineno}") if user else _control(text, name, lineno, clean)
        )
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


def read_lines(
    path: str | Path, allow_empty_file: bool = False, clean: bool = False, user: bool = False
) -> list[str]:
    """All lines of a UTF-8 text file (plain or ``.gz``), without line terminators
    (``user``: text to translate, see :func:`user_line`).

    Raises:
        DataError: the file is missing or empty, is not valid gzip, or a line is not UTF-8.
    """
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: file does not exist")
    lines: list[str] = []
    try:
        with _open_binary(path) as fh:
            lines = decode_lines(fh, str(path), clean=clean, user=user)
    except (OSError, EOFError) as err:  # e.g. a truncated or fake .gz file
        raise DataError(f"{path}: cannot be read: {err}") from None
    if not lines and not allow_empty_file:
        raise DataError(f"{path}: file is empty")
    return lines


def _length_mismatch(src_path, n_src: int, tgt_path, n_tgt: int) -> DataError:
    short, n = (src_path, n_src) if n_src < n_tgt else (tgt_path, n_tgt)
    return DataError(
        f"parallel files differ in length: {src_path} has {n_src} lines but {tgt_path} "
        f"has {n_tgt}; {short} ends after line {n}"
    )


def read_parallel(
    src_path: str | Path, tgt_path: str | Path, clean: bool = False
) -> tuple[list[str], list[str]]:
    """Two line-aligned files; their line counts must match."""
    src, tgt = read_lines(src_path, clean=clean), read_lines(tgt_path, clean=clean)
    if len(src) != len(tgt):
        raise _length_mismatch(src_path, len(src), tgt_path, len(tgt))
    return src, tgt


def iter_parallel(
    src_path: str | Path, tgt_path: str | Path, chunk: int, clean: bool = False
) -> Iterator[tuple[list[str], list[str]]]:
    """Two line-aligned files read ``chunk`` lines at a time, never whole: the same checks as
    :func:`read_parallel` (missing, empty, unreadable, bad UTF-8, different lengths)."""
    paths = (Path(src_path), Path(tgt_path))
    for path in paths:
        if not path.is_file():
            raise DataError(f"{path}: file does not exist")
    try:
        with _open_binary(paths[0]) as fs, _open_binary(paths[1]) as ft:
            start = 1
            while True:
                a = decode_lines(islice(fs, chunk), str(paths[0]), start, clean)
                b = decode_lines(islice(ft, chunk), str(paths[1]), start, clean)
                for lines, path in ((a, paths[0]), (b, paths[1])):
                    if start == 1 and not lines:
                        raise DataError(f"{path}: file is empty")
                if len(a) != len(b):
                    n_src, n_tgt = (
                        start - 1 + len(a) + sum(1 for _ in fs),
                        start - 1 + len(b) + sum(1 for _ in ft),
                    )
                    raise _length_mismatch(paths[0], n_src, paths[1], n_tgt)
                if not a:
                    break
                yield a, b
                start += len(a)
    except (OSError, EOFError) as err:
        raise DataError(f"{paths[0]} / {paths[1]}: cannot be read: {err}") from None
    if start == 1:
        raise DataError(f"{paths[0]}: file is empty")
