"""The HTTP API of ``serve`` (aiohttp; ``pip install -e ".[serve]"``).

* ``POST /translate`` with ``{"text": "one sentence"}`` or ``{"text": ["a", "b", ...]}``
  answers ``{"model", "translations": [...], "truncated": [...]}``: one translation per
  sentence, in order (with ``--n-best N``, N ``{"text", "score"}`` objects each), and the
  indices of the sentences cut to ``--max-src-len``.
* ``POST /attention`` with ``{"text": "one sentence"}`` answers the attention of its best
  translation (:func:`~.models.attention_json`): tokens, the matrix, ``p_t``, the links.
* Both take ``"model"`` (a name given to ``serve``; default the first), the decoding options
  ``"beam"`` (1: greedy), ``"n_best"`` and ``"replace_unk"``, sampling's ``"sampling"``,
  ``"temperature"``, ``"top_k"``, ``"top_p"`` and ``"seed"``, and ``"prefix"``: the text each
  translation begins with (a string, or a list as long as ``"text"``'s).
* ``GET /health`` answers ``{"status": "ok", ...}`` with the models and the decoding defaults;
  ``GET /`` is a page that shows what the models attend to (``page/``, no request leaves it).
  ``GET /translate`` (or ``/attention``) answers a 405 in JSON that says to POST, and how.

Each request is one line on standard error (:func:`request_log`; ``serve --no-request-log``:
none). A request that is not JSON, has no text, too many sentences or too long a sentence gets a
4xx with a message; an error inside decoding gets a 500 for that batch and the server goes on.
When ``--max-queue`` requests already wait for their decoding, another gets a 503 at once, with
``Retry-After`` (seconds); the listen queue holds a burst of connections
(:func:`listen_backlog`), so that none is reset.
"""

from __future__ import annotations

import errno
import logging
import socket
from functools import cache, partial
from pathlib import Path
from typing import Any

from luong_lit.errors import UsageError, UserError
from luong_lit.serving.batcher import Batcher
from luong_lit.serving.models import (
    ServedModel,
    attention_json,
    decode_lines,
    request_options,
    translation_json,
)
from luong_lit.serving.requests import (
    BadRequest,
    Busy,
    Limits,
    parse_body,
    prefixes,
    sentences,
    settings,
)

log = logging.getLogger("luong_lit.serve")
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
    first = tr.model.members[0]  # an ensemble: its first model
    return {
        "name": model.name,
        "checkpoints": model.checkpoints,
        "attention": first.attention_kind,
        "window": first.window,
    }


class Api:
    """The handlers of the HTTP API over ``models`` (``info``: decoding defaults, for
    ``/health``); requests wait in one :class:`Batcher`."""

    def __init__(self, models: list[ServedModel], limits: Limits, info: dict[str, Any]) -> None:
        self.models, self.limits, self.info = models, limits, info
        self.by_name = {m.name: m for m in models}
        self.batcher = Batcher(limits.max_batch, limits.max_wait_ms)

    async def decode(self, request, attention: bool):
        """A request's model, n-best size and outputs (checked before it is queued). A request
        that samples with a seed is decoded alone: its samples depend on its batch only."""
        data = parse_body(await request.read())
        if attention and not isinstance(data.get("text"), str):
            raise BadRequest(400, 'expected {"text": "one sentence"}')
        lines = sentences(data, self.limits)
        given = prefixes(data, len(lines), self.limits)
        s = settings(data, list(self.by_name), self.limits)
        model = self.by_name[s.model]
        search = request_options(model, s)
        model.translator.check_prefix(lines, given, search)  # a 400 now, not a failed batch
        if self.batcher.waiting >= self.limits.max_queue:  # one more would wait too long
            raise Busy(self.batcher.waiting, self.batcher.retry_after())
        job = partial(decode_lines, model, search=search, attention=attention)
        key = object() if search.sampling and search.seed is not None else (attention, s)
        # the batcher hands each request's items to the job as they are: (line, prefix) pairs,
        # decode_lines's items, where Batcher.submit's annotation says lines
        items = list(zip(lines, given))
        outs = await self.batcher.submit(key, job, items)  # type: ignore[arg-type]
        return model, search.n_best, outs

    async def translate(self, request) -> dict:
        model, n, outs = await self.decode(request, attention=False)
        return {
            "model": model.name,
            "translations": [translation_json(o, n) for o in outs],
            "truncated": [i for i, o in enumerate(outs) if o.truncated],
        }

    async def attention(self, request) -> dict:
        model, _, outs = await self.decode(request, attention=True)
        return attention_json(model, outs[0])

    async def health(self, request) -> dict:
        return {"status": "ok", "batches": self.batcher.batches,
                "waiting": self.batcher.waiting, **self.info,
                "models": [describe(m) for m in self.models]}  # fmt: skip


def refusal(err: Exception, limits: Limits) -> BadRequest | None:
    """The 4xx for a request the server refuses (its own checks, aiohttp's body limit, a
    decoding option the model cannot take); None for the server's own failure."""
    from aiohttp import web

    if isinstance(err, BadRequest):
        return err
    if isinstance(err, web.HTTPRequestEntityTooLarge):
        return BadRequest(
            413, f"the body is larger than {limits.max_body} bytes, this server's limit"
        )
    if isinstance(err, web.HTTPException) and 400 <= err.status < 500:
        return BadRequest(err.status, err.reason)
    if isinstance(err, UserError):  # e.g. a beam wider than the model's vocabulary
        return BadRequest(400, str(err))
    return None


def as_json(handler, limits: Limits):
    """``handler``'s dict as a JSON answer; a refused request a 4xx that says why, the server's
    own failure a 500 (logged with its cause; the server goes on)."""
    from aiohttp import web

    async def wrapped(request: web.Request) -> web.Response:
        try:
            return web.json_response(await handler(request))
        except Exception as err:  # noqa: BLE001 - refused: a 4xx; failed: a 500
            refused = refusal(err, limits)
            if refused is not None:
                headers = None
                if isinstance(refused, Busy):
                    headers = {"Retry-After": str(refused.retry_after)}
                return web.json_response(
                    {"error": str(refused)}, status=refused.status, headers=headers
                )
            log.error("%s %s failed", request.method, request.path, exc_info=err)
            return web.json_response({"error": f"decoding failed: {err}"}, status=500)

    return wrapped


async def page_file(request):
    """The page's files, each with the security headers."""
    from aiohttp import web

    name, kind = STATIC[request.path]
    body = (PAGE / name).read_bytes()
    return web.Response(body=body, content_type=kind, charset="utf-8", headers=SECURITY)


#: what each POST-only path takes, said to a GET of it
POSTED = {
    "/translate": '{"text": "a sentence"} or {"text": ["a", "b"]}',
    "/attention": '{"text": "a sentence"}',
}


def post_only(path: str):
    """The handler of ``GET path`` for a path that takes POST only: a 405, in JSON, that says how
    to ask (a browser or ``curl URL`` without ``-d`` gets an answer it can read)."""
    from aiohttp import web

    async def handler(request) -> web.Response:
        said = f"use POST for {path}, with a JSON body such as {POSTED[path]}"
        return web.json_response({"error": said}, status=405, headers={"Allow": "POST"})

    return handler


@cache
def api_key():
    """The key of the application's :class:`Api` (``app[api_key()]``)."""
    from aiohttp import web

    return web.AppKey("api", Api)


def make_app(models: list[ServedModel], limits: Limits, info: dict[str, Any]):
    """The aiohttp application over ``models`` (``info``: decoding defaults, for ``/health``);
    its :class:`Api` is ``app[api_key()]``."""
    from aiohttp import web

    api = Api(models, limits, info)
    app = web.Application(client_max_size=limits.max_body)
    app[api_key()] = api
    for path, handler in (("/translate", api.translate), ("/attention", api.attention)):
        app.router.add_post(path, as_json(handler, limits))
        app.router.add_get(path, post_only(path))
    app.router.add_get("/health", as_json(api.health, limits))
    for path in STATIC:
        app.router.add_get(path, page_file)

    async def start(app) -> None:
        api.batcher.start()

    async def stop(app) -> None:
        await api.batcher.stop()

    app.on_startup.append(start)
    app.on_cleanup.append(stop)
    return app


#: a request's line: the client, the request line, the status, the bytes answered, the seconds
REQUEST_LINE = '%a "%r" %s %b bytes %Tf s'


def request_log(enabled: bool = True) -> dict[str, Any]:
    """``web.run_app``'s access-log arguments: one line per request on standard error, after its
    time (``enabled``), or none."""
    if not enabled:
        return {"access_log": None}
    logger = logging.getLogger("luong_lit.serve.requests")
    if not logger.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(asctime)s %(message)s"))
        logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False  # the command's own handler shows warnings only
    return {"access_log": logger, "access_log_format": REQUEST_LINE}


def listen_backlog() -> int:
    """The listen queue of the server's socket: the system's largest (``somaxconn``), at least
    1024, so that a burst of connections waits to be accepted instead of being reset."""
    try:
        most = int(Path("/proc/sys/net/core/somaxconn").read_text())
    except (OSError, ValueError):  # not Linux
        most = socket.SOMAXCONN
    return max(1024, most)


def bound_socket(host: str, port: int) -> socket.socket:
    """A socket bound to ``host:port``, before any model is loaded: a port in use is one line
    at once, not a traceback after the loading."""
    try:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
    except (OSError, OverflowError) as err:
        in_use = getattr(err, "errno", None) == errno.EADDRINUSE
        why = "is in use (another server?)" if in_use else f"cannot be used ({err})"
        raise UsageError(f"--host {host} --port {port}: the address {why}") from None
    return sock
