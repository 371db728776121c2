"""What a request may ask, checked: its sentences, its model and its decoding options.

A request that is not JSON, has no text, too many sentences, too long a sentence, a control
character or a decoding option out of range gets a :class:`BadRequest` (a 4xx with a message);
one beyond what the server may hold waiting, :class:`Busy` (a 503 with ``Retry-After``).
"""

from __future__ import annotations

import dataclasses
import difflib
import json
from dataclasses import dataclass
from typing import Any

from luong_lit.data.io import user_line
from luong_lit.errors import DataError
from luong_lit.translator.fields import flag_type, request_fields
from luong_lit.translator.options import SearchOptions, at_least
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


#: the decoding options a request may ask for: SearchOptions' fields a request may set
ASKED = tuple(f.name for f in request_fields(SearchOptions))
#: what a request may hold (the decoding options by their Python names)
KEYS = ("text", "model", *ASKED, "prefix")


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
    """A request's model and the decoding options it asks for (by name, those it leaves unset
    left out): requests with equal settings are decoded together."""

    model: str
    asked: tuple[tuple[str, Any], ...] = ()

    @classmethod
    def of(cls, model: str, **asked: Any) -> Settings:
        return cls(model, tuple(sorted((k, v) for k, v in asked.items() if v is not None)))

    def get(self, name: str) -> Any:
        """The value a request asks for ``name``; None where it leaves it to the server."""
        return dict(self.asked).get(name)


def _checked(data: dict, f: dataclasses.Field, limits: Limits) -> Any:
    """A request's value of option ``f`` (None: unset), of the kind the option takes; its range
    is the search's to check (SearchOptions), but for a count's (``--max-beam``)."""
    key, value, kind = f.name, data.get(f.name), flag_type(f)
    if value is None:
        return None
    if kind is bool and not isinstance(value, bool):
        raise BadRequest(400, f'"{key}" must be true or false, got {value!r}')
    count = isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= limits.max_beam
    if f.metadata["count"] and not count:
        raise BadRequest(
            400, f'"{key}" must be an integer from 1 to {limits.max_beam}, got {value!r}'
        )
    if kind in (int, float) and not isinstance(value, (int, float)):
        raise BadRequest(400, f'"{key}" must be a number, got {value!r}')
    return value


def settings(data: dict[str, Any], models: list[str], limits: Limits) -> Settings:
    """The model (``"model"``, else the first one served) and the decoding options a request
    asks for (:data:`ASKED`: ``"beam"`` (1: greedy), ``"n_best"``, ``"replace_unk"``, and
    sampling's ``"sampling"``, ``"temperature"``, ``"top_k"``, ``"top_p"``, ``"seed"``)."""
    model = data.get("model", models[0])
    if model not in models:
        raise BadRequest(404, f"no model {model!r}; this server has {', '.join(map(repr, models))}")
    asked = {f.name: _checked(data, f, limits) for f in request_fields(SearchOptions)}
    beam, n_best = asked.get("beam"), asked.get("n_best")
    if n_best is not None and beam is not None and n_best > beam and not asked.get("sampling"):
        raise BadRequest(400, f'"n_best" {n_best} needs a "beam" of at least {n_best}')
    return Settings.of(model, **asked)
