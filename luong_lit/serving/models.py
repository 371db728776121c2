"""The models a server holds, each under a name, and what a request's decoding gives as JSON.

``serve A.ckpt`` serves one model (several unnamed checkpoints: one ensemble, as ``translate``
takes them); ``serve global=A.ckpt local_p=B.ckpt`` serves two, side by side, and
``NAME=A.ckpt,B.ckpt`` names an ensemble. Requests choose one with ``"model"`` (default: the
first).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from luong_lit.decoding.search import beam_width
from luong_lit.errors import UsageError
from luong_lit.serving.requests import BadRequest, Settings
from luong_lit.translator import AttentionMap, LoadOptions, Output, SearchOptions, Translator
from luong_lit.translator.options import SHAPING

NAMED = re.compile(r"^([A-Za-z_][\w.-]*)=(.+)$")


@dataclass
class ServedModel:
    name: str
    checkpoints: list[str]
    translator: Translator  # its default search: the server's options


def parse_model_specs(specs: Sequence[str]) -> list[tuple[str, list[str]]]:
    """``[(name, checkpoints)]`` from ``serve``'s arguments: all named (``NAME=CKPT[,CKPT]``),
    or all plain paths (one model named ``model``). A path that exists is a path, ``=`` or not."""
    named = [None if Path(s).exists() else NAMED.match(s) for s in specs]
    if not any(named):
        return [("model", list(specs))]
    if not all(named):
        plain = [s for s, m in zip(specs, named) if m is None]
        raise UsageError(f"name every checkpoint (NAME=CKPT) or none; not named: {' '.join(plain)}")
    matches = [m for m in named if m is not None]  # all of them, as checked above
    names = [m.group(1) for m in matches]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise UsageError(f"model names must differ: {', '.join(twice)} given twice")
    return [(m.group(1), m.group(2).split(",")) for m in matches]


def load_served(
    specs: Sequence[str], options: LoadOptions, search: SearchOptions
) -> list[ServedModel]:
    """Every model ``specs`` names, loaded with the server's options."""
    return [
        ServedModel(name, paths, Translator.load(paths, options, search))
        for name, paths in parse_model_specs(specs)
    ]


def health_info(search: SearchOptions) -> dict:
    """The decoding a request gets by default, as ``/health`` tells the page: the search
    (``sampling`` where the server samples), the beam decoded (12 under the authors' decoder;
    1: greedy), n-best and unknown-word replacement."""
    beam = beam_width(search.search())
    kind = "authors" if search.authors_decoder else "beam" if beam > 1 else "greedy"
    kind = "sampling" if search.sampling else kind
    return {"search": kind, "beam": beam, "n_best": search.n_best,
            "replace_unk": search.replace_unk}  # fmt: skip


def request_options(model: ServedModel, s: Settings) -> SearchOptions:
    """A request's search, checked before it is queued. A request's beam is the beam decoded,
    even where the server runs the authors' decoder or samples; a request that samples leaves
    the server's beam-search options (the authors' decoder, a length penalty) out."""
    changes: dict[str, Any] = dict(s.asked)
    beam, sampling = s.get("beam"), s.get("sampling")
    if beam is not None:
        changes["authors_decoder"] = False
    if sampling is False or (beam is not None and sampling is None):
        changes = {**SHAPING, **changes, "sampling": False}
    if sampling:
        changes.update(authors_decoder=False, length_penalty=None)
    try:
        return model.translator.search_options(**changes)
    except UsageError as err:
        raise BadRequest(400, str(err)) from None


def decode_lines(
    model: ServedModel, items: list[tuple[str, str]], search: SearchOptions, attention: bool
) -> list[Output]:
    """The request's lines translated with its search (and the attention, if asked); ``items``:
    each line with its prefix ("" for none)."""
    lines, prefix = [x for x, _ in items], [p for _, p in items]
    chosen = prefix if any(prefix) else None
    return model.translator.run(lines, search, attention=attention, prefix=chosen)


def translation_json(out: Output, n: int) -> Any:
    """One translation: its text, or ``n > 1`` ``{"text", "score"}`` objects, best first."""
    if n == 1:
        return out.text
    return [{"text": h.text, "score": round(h.score or 0.0, 4)} for h in out.hypotheses]


def attention_json(model: ServedModel, out: Output) -> dict[str, Any]:
    """``POST /attention``'s answer for one sentence: the :class:`AttentionMap` of its best
    translation, with the translation, the n best and whether the source was cut."""
    att: AttentionMap | None = out.attention
    assert att is not None  # decoded with attention=True: run attaches every line's map
    return {
        "model": model.name,
        "translation": out.text,
        "hypotheses": [{"text": h.text, "score": h.score} for h in out.hypotheses],
        "truncated": out.truncated,
        **dataclasses.asdict(att),
        "links": [list(x) for x in att.links],
        "replaced": [{"target": t, "source": s} for t, s in sorted(att.replaced.items())],
    }
