"""The HTTP API of ``serve`` (aiohttp; ``pip install -e ".[serve]"``).

* ``POST /translate`` with ``{"text": "one sentence"}`` or ``{"text": ["a", "b", ...]}``
  answers ``{"model", "translations": [...], "truncated": [...]}``: one translation per
  sentence, in order (with ``--n-best N``, N ``{"text", "score"}`` objects each), and the
  indices of the sentences cut to ``--max-src-len``.
* ``POST /attention`` with ``{"text": "one sentence"}`` answers the attention of its best
  translation (:func:`~.models.attention_json`): tokens, the matrix, ``p_t``, the links.
* Both take ``"model"`` (a name given to ``serve``; default the first) and the decoding options
  ``"beam"`` (1: greedy), ``"n_best"`` and ``"replace_unk"``.
* ``GET /health`` answers ``{"status": "ok", ...}`` with the models and the decoding defaults;
  ``GET /`` is a page that shows what the models attend to (``page/``, no request leaves it).

A request that is not JSON, has no text, too many sentences or too long a sentence gets a 4xx
with a message; an error inside decoding gets a 500 for that batch and the server goes on.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

from luong_lit.serving.batcher import Batcher
from luong_lit.serving.models import (
    ServedModel,
    attention_json,
    attentions,
    translation_json,
    translations,
)
from luong_lit.serving.requests import BadRequest, Limits, parse_body, sentences, settings

PAGE = Path(__file__).resolve().parent / "page"
STATIC = {"/": ("index.html", "text/html"), "/page.js": ("page.js", "text/javascript"),
          "/page.css": ("page.css", "text/css")}  # fmt: skip
#: the page may load only its own files and call only this server: no inline script, no CDN
SECURITY = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; object-src 'none'",
    "X-Content-Type-Options": "nosniff",
}


def describe(model: ServedModel) -> dict[str, Any]:
    """What ``/health`` says of a model (the page draws a panel per model from it)."""
    tr = model.translator
    net = getattr(tr.model, "members", [tr.model])[0]
    att = getattr(net, "attention", None)
    return {
        "name": model.name,
        "checkpoints": model.checkpoints,
        "attention": type(att).__name__ if att is not None else None,
        "window": getattr(att, "D", None),
    }


def make_app(models: list[ServedModel], limits: Limits, info: dict[str, Any]):
    """The aiohttp application over ``models`` (``info``: decoding defaults, for ``/health``)."""
    from aiohttp import web

    batcher = Batcher(limits.max_batch, limits.max_wait_ms)
    by_name = {m.name: m for m in models}

    async def decode(request, kind: str, one_sentence: bool):
        data = parse_body(await request.read())
        if one_sentence and not isinstance(data.get("text"), str):
            raise BadRequest(400, 'expected {"text": "one sentence"}')
        lines, s = sentences(data, limits), settings(data, list(by_name), limits)
        model = by_name[s.model]
        job = partial(attentions if kind == "attention" else translations, model, s=s)
        return model, s, await batcher.submit((kind, s), job, lines)

    def answer(handler):
        async def wrapped(request: web.Request) -> web.Response:
            try:
                return web.json_response(await handler(request))
            except BadRequest as err:
                return web.json_response({"error": str(err)}, status=err.status)
            except Exception as err:  # noqa: BLE001 - the batch failed; the server goes on
                return web.json_response({"error": f"decoding failed: {err}"}, status=500)

        return wrapped

    async def on_translate(request) -> dict:
        model, s, outs = await decode(request, "translate", False)
        n = s.n_best or model.n_best
        return {
            "model": model.name,
            "translations": [translation_json(o, n) for o in outs],
            "truncated": [i for i, o in enumerate(outs) if o.truncated],
        }

    async def on_attention(request) -> dict:
        model, _, outs = await decode(request, "attention", True)
        return attention_json(model, outs[0])

    async def on_health(request) -> dict:
        return {"status": "ok", "batches": batcher.batches, **info,
                "models": [describe(m) for m in models]}  # fmt: skip

    async def on_static(request: web.Request) -> web.Response:
        name, kind = STATIC[request.path]
        body = (PAGE / name).read_bytes()
        return web.Response(body=body, content_type=kind, charset="utf-8", headers=SECURITY)

    async def on_startup(app) -> None:
        batcher.start()

    async def on_cleanup(app) -> None:
        await batcher.stop()

    app = web.Application(client_max_size=limits.max_body)
    app.router.add_post("/translate", answer(on_translate))
    app.router.add_post("/attention", answer(on_attention))
    app.router.add_get("/health", answer(on_health))
    for path in STATIC:
        app.router.add_get(path, on_static)
    app.on_startup.append(on_startup)
    app.on_cleanup.append(on_cleanup)
    return app
