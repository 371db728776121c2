"""What a request may ask, checked: its sentences, its model and its decoding options.

A request that is not JSON, has no text, too many sentences, too long a sentence, a control
character or a decoding option out of range gets a :class:`BadRequest` (a 4xx with a message);
one beyond what the server may hold waiting, :class:`Busy` (a 503 with ``Retry-After``).
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass
from typing import Any

from luong_lit.data.io import user_line
from luong_lit.errors import DataError
from luong_lit.translator.options import at_least
from luong_lit.validate import OptionError


@dataclass
class Limits:
    """What a request may ask and how batches are made (``serve``'s ``--max-*`` options)."""

    max_sentences: int = 64  # per request
    max_chars: int = 1000  # per sentence
    max_batch: int = 64  # sentences decoded together
    max_wait_ms: float = 10.0  # how long the first sentence of a batch waits for company
    max_body: int = 1 << 20  # bytes
    max_beam: int = 50  # the largest beam or n-best list a request may ask for
    max_queue: int = 256  # requests waiting for their decoding; one more: a 503 at once

    def __post_init__(self) -> None:
        names = ("max_sentences", "max_chars", "max_batch", "max_body", "max_beam", "max_queue")
        for name in names:
            at_least(name, getattr(self, name), 1)
        if isinstance(self.max_wait_ms, bool) or not self.max_wait_ms >= 0:
            raise OptionError.keyword(
                f"{{max_wait_ms}} must be at least 0, got {self.max_wait_ms!r}", "max_wait_ms"
            )


class BadRequest(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class Busy(BadRequest):
    """A request beyond what the server may hold (``--max-queue``): a 503 with ``Retry-After``
    (seconds), answered at once."""

    def __init__(self, waiting: int, retry_after: int) -> None:
        super().__init__(
            503, f"the server is busy: {waiting} requests wait for their decoding (its "
            f"--max-queue); retry after {retry_after} s",
        )  # fmt: skip
        self.retry_after = retry_after


#: what a request may hold (the decoding options by their Python names, SearchOptions)
KEYS = ("text", "model", "beam", "n_best", "replace_unk", "sampling", "temperature", "top_k",
        "top_p", "seed", "prefix")  # fmt: skip


def parse_body(body: bytes) -> dict[str, Any]:
    """The JSON object of a request body; a key it may not hold is refused with those it may."""
    try:
        data = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise BadRequest(400, f"the body is not JSON: {err}") from None
    if not isinstance(data, dict):
        raise BadRequest(400, 'expected a JSON object such as {"text": "a sentence"}')
    unknown = sorted(set(data) - set(KEYS), key=str)
    if unknown:
        near = difflib.get_close_matches(str(unknown[0]), KEYS, n=1)
        hint = f' (did you mean "{near[0]}"?)' if near else ""
        keys = ", ".join(f'"{k}"' for k in KEYS)
        raise BadRequest(400, f'unknown key "{unknown[0]}"{hint}; a request may hold {keys}')
    return data


def sentences(data: dict[str, Any], limits: Limits) -> list[str]:
    """The sentences of ``{"text": "one"}`` or ``{"text": ["a", "b", ...]}``, each one line of
    text to translate (space-like characters read as spaces)."""
    text = data.get("text")
    if isinstance(text, str):
        text = [text]
    if not isinstance(text, list) or not all(isinstance(t, str) for t in text):
        raise BadRequest(400, 'expected {"text": "a sentence"} or {"text": ["a", "b", ...]}')
    if not text:
        raise BadRequest(400, "no sentences to translate")
    if len(text) > limits.max_sentences:
        raise BadRequest(413, f"{len(text)} sentences; at most {limits.max_sentences} a request")
    out = []
    for i, t in enumerate(text):
        if len(t) > limits.max_chars:
            raise BadRequest(
                413, f"sentence {i} has {len(t)} characters; at most {limits.max_chars}"
            )
        try:
            out.append(user_line(t, f"sentence {i}"))
        except DataError as err:
            raise BadRequest(400, str(err)) from None
    return out


def prefixes(data: dict[str, Any], n: int, limits: Limits) -> list[str]:
    """The prefix of each of the ``n`` sentences (``"prefix"``: one string for ``{"text":
    "one"}``, else a list as long as the text's, null or "" for none); "" for none."""
    given = data.get("prefix")
    if given is None:
        return [""] * n
    items = [given] if isinstance(given, str) and not isinstance(data.get("text"), list) else given
    if not isinstance(items, list) or not all(isinstance(p, (str, type(None))) for p in items):
        raise BadRequest(400, '"prefix" must be like "text": a string, or a list of strings')
    if len(items) != n:
        raise BadRequest(400, f'"prefix" has {len(items)} items for {n} sentences')
    out = []
    for i, p in enumerate(items):
        p = p or ""
        if len(p) > limits.max_chars:
            raise BadRequest(413, f"prefix {i} has {len(p)} characters; at most {limits.max_chars}")
        try:
            out.append(user_line(p, f"prefix {i}"))
        except DataError as err:
            raise BadRequest(400, str(err)) from None
    return out


@dataclass(frozen=True)
class Settings:
    """A request's model and decoding: requests with equal settings are decoded together."""

    model: str
    beam: int | None = None  # None: the server's own (1: greedy)
    n_best: int | None = None
    replace_unk: bool | None = None
    sampling: bool | None = None
    temperature: float | None = None  # checked with the search (SearchOptions)
    top_k: int | None = None
    top_p: float | None = None
    seed: int | None = None


def _count(data: dict, key: str, limits: Limits) -> int | None:
    value = data.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= limits.max_beam:
        raise BadRequest(
            400, f'"{key}" must be an integer from 1 to {limits.max_beam}, got {value!r}'
        )
    return value


def settings(data: dict[str, Any], models: list[str], limits: Limits) -> Settings:
    """The model (``"model"``, else the first one served) and the decoding options a request
    asks for: ``"beam"`` (1: greedy), ``"n_best"``, ``"replace_unk"``, and sampling's
    ``"sampling"``, ``"temperature"``, ``"top_k"``, ``"top_p"``, ``"seed"``."""
    model = data.get("model", models[0])
    if model not in models:
        raise BadRequest(404, f"no model {model!r}; this server has {', '.join(map(repr, models))}")
    for key in ("replace_unk", "sampling"):
        if data.get(key) is not None and not isinstance(data[key], bool):
            raise BadRequest(400, f'"{key}" must be true or false, got {data[key]!r}')
    beam, n_best = _count(data, "beam", limits), _count(data, "n_best", limits)
    if n_best is not None and beam is not None and n_best > beam and not data.get("sampling"):
        raise BadRequest(400, f'"n_best" {n_best} needs a "beam" of at least {n_best}')
    shaping = {k: data.get(k) for k in ("temperature", "top_k", "top_p", "seed")}
    for key, value in shaping.items():  # a number, else SearchOptions says what it must be
        if value is not None and not isinstance(value, (int, float)):
            raise BadRequest(400, f'"{key}" must be a number, got {value!r}')
    return Settings(model, beam, n_best, data.get("replace_unk"), data.get("sampling"), **shaping)
