"""What the Python API is given, checked at its door: a :class:`~luong_lit.errors.UsageError`
that names the argument, never an error from deep inside the decoder.

Texts follow the command line's policy (:func:`luong_lit.data.io.user_line`): space-like
characters read as spaces, another control character or a line break is refused, naming the
item (``texts[2]``) and the column.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

from luong_lit.data.io import user_line
from luong_lit.data.text.model_text import SourceLine, TokenizedText
from luong_lit.errors import DataError, UsageError


def _kind(value: Any) -> str:
    return type(value).__name__


def texts_of(texts: Any, name: str = "texts") -> list[str]:
    """``texts`` (one ``str``, or a sequence of them) as a list of lines to translate."""
    if isinstance(texts, (bytes, bytearray)):
        raise UsageError(f"{name} is bytes: give text (str), e.g. {name}.decode('utf-8')")
    if isinstance(texts, str):
        items = [texts]
    elif isinstance(texts, Iterable) and not isinstance(texts, dict):
        items = list(texts)
    else:
        raise UsageError(f"{name} must be a str or a sequence of str, got {_kind(texts)}")
    lines = []
    for i, text in enumerate(items):
        where = name if isinstance(texts, str) else f"{name}[{i}]"
        if isinstance(text, (bytes, bytearray)):
            raise UsageError(f"{where} is bytes: give text (str), e.g. .decode('utf-8')")
        if not isinstance(text, str):
            raise UsageError(f"{where} must be a str, got {_kind(text)} ({text!r:.40})")
        try:
            lines.append(user_line(text, where))
        except DataError as err:
            raise UsageError(str(err)) from None
    return lines


def one_text(text: Any, name: str = "text") -> str:
    """A single text (a ``str``), for a call that reads one sentence."""
    if not isinstance(text, str):
        raise UsageError(
            f"{name} must be one str, got {_kind(text)}; call it once per text for several"
        )
    return texts_of(text, name)[0]


def checkpoint_paths(checkpoints: Any) -> list[str | os.PathLike[str]]:
    """One checkpoint path, or a non-empty sequence of them (an ensemble)."""
    if isinstance(checkpoints, (str, os.PathLike)):
        return [checkpoints]
    paths = list(checkpoints) if isinstance(checkpoints, (list, tuple)) else None
    if not paths or not all(isinstance(p, (str, os.PathLike)) for p in paths):
        raise UsageError(
            f"checkpoints must be a path or a non-empty list of paths, got {checkpoints!r:.60}"
        )
    return paths


def cut_overlong(
    sources: list[SourceLine], limit: int, overlong: str
) -> tuple[list[SourceLine], list[bool]]:
    """The sources as ``overlong`` treats those of more than ``limit`` tokens (0: no limit):
    cut to ``limit`` (``truncate``), left without words (``skip``: an empty translation) or
    kept whole (``keep``); and which were overlong and not kept."""
    cut = [bool(limit) and overlong != "keep" and len(s.tokens) > limit for s in sources]
    if overlong == "truncate":
        return [s._replace(tokens=s.tokens[:limit]) if c else s for s, c in zip(sources, cut)], cut
    if overlong == "skip":
        return [s._replace(tokens=[]) if c else s for s, c in zip(sources, cut)], cut
    return sources, cut


def token_pairs(text: TokenizedText, src: Any, tgt: Any) -> tuple[list[list[str]], list[list[str]]]:
    """Source and target texts (``src``, ``tgt``: one ``str`` each, or sequences of them) as
    the model's tokens (``text``: its text handling), pair by pair; every source has words."""
    srcs, tgts = texts_of(src, "src"), texts_of(tgt, "tgt")
    if len(srcs) != len(tgts):
        raise UsageError(f"{len(srcs)} sources but {len(tgts)} targets")
    src_words = [text.source(x).tokens for x in srcs]
    empty = next((i for i, s in enumerate(src_words) if not s), None)
    if empty is not None:
        raise UsageError(f"src[{empty}] has no words; every source needs at least one")
    return src_words, [text.target_tokens(x) for x in tgts]
