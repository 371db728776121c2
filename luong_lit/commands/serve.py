"""Serve models over HTTP, with a page that shows what they attend to (pip install -e ".[serve]").

    python -m luong_lit serve CKPT [CKPT ...] [--port 8080] [--beam 5] [--replace-unk] ...
    python -m luong_lit serve global=A.ckpt local_p=B.ckpt      # two models, side by side
    curl -s localhost:8080/translate -d '{"text": ["A man is riding a bike."]}'

Open http://localhost:8080/ for the page: type a sentence, choose the decoding, and see each
model's translation and its attention. Raw text in, natural text out, as translate does, with
the same decoding options (each request may ask for its own beam, n-best, unknown-word
replacement, sampling and prefix). Unnamed checkpoints are one model (several: an ensemble);
NAME=CKPT names a model, and NAME=A.ckpt,B.ckpt an ensemble. Requests arriving together are
decoded as one batch (--max-batch sentences, --max-wait-ms); beyond --max-queue requests
waiting, another is answered 503 at once with Retry-After. Each request is a line on standard
error (its time, client, request, status, size and seconds; --no-request-log: none). SIGTERM or
Ctrl-C: the server stops accepting, answers what it holds, says that it stopped, and exits. The
API: luong_lit/serving/app.py.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from luong_lit.cli import (
    add_decoding_args,
    add_input_args,
    add_n_best_arg,
    add_sampling_args,
    check_threads,
    load_options,
    run_command,
    search_options,
)
from luong_lit.cli import parser as make_parser
from luong_lit.errors import UsageError
from luong_lit.runtime import configure_cpu
from luong_lit.serving import Limits, health_info, load_served, make_app
from luong_lit.serving.app import api_key, bound_socket, listen_backlog, request_log


def parser() -> argparse.ArgumentParser:
    ap = make_parser("serve", __doc__)
    ap.add_argument(
        "checkpoints",
        nargs="+",
        metavar="[NAME=]CKPT",
        help="a checkpoint (several: an ensemble), or NAME=CKPT[,CKPT] for each of several models",
    )
    add_decoding_args(ap, checkpoints=False)
    add_sampling_args(ap)
    add_input_args(ap, max_src_len=100)
    ap.add_argument("--host", default="127.0.0.1", help="address to listen on")
    ap.add_argument("--port", type=int, default=8080, help="port to listen on")
    add_n_best_arg(ap, 'N > 1: each answer is N {"text", "score"} objects')
    ap.add_argument("--max-sentences", type=int, default=64, help="sentences in one request")
    ap.add_argument("--max-chars", type=int, default=1000, help="characters in one sentence")
    ap.add_argument("--max-batch", type=int, default=64, help="sentences decoded together")
    ap.add_argument(
        "--max-wait-ms", type=float, default=10.0, help="how long a batch waits to fill up"
    )
    ap.add_argument(
        "--max-queue",
        type=int,
        default=Limits.max_queue,
        help="requests that may wait for their decoding; one more is answered 503 at once, "
        "with Retry-After",
    )
    ap.add_argument(
        "--no-request-log", action="store_true", help="no line on standard error per request"
    )
    return ap


def banner(args, models) -> str:
    """What ``serve`` prints once it listens: where, the models, the decoding."""
    names = "; ".join(f"{m.name} = {' + '.join(m.checkpoints)}" for m in models)
    search = "the authors' decoder" if args.authors_decoder else f"beam {args.beam}"
    search = "sampling" if args.sampling else search
    extras = [f"n-best {args.n_best}"] if args.n_best > 1 else []
    extras += ["unk replacement"] if args.replace_unk else []
    extras += [f"engine {args.engine}" + (f", int8 {args.int8}" if args.int8 else "")]
    return (
        f"serving on http://{args.host}:{args.port}/ (the page; POST /translate, POST /attention, "
        f"GET /health)\nmodels: {names}\ndecoding: {search}, {', '.join(extras)}; sources over "
        f"{args.max_src_len} tokens: {args.overlong}; Ctrl-C or SIGTERM stops it"
    )


def stopped(args, app) -> str:
    """What ``serve`` prints once it has stopped."""
    n = app[api_key()].batcher.batches
    decoded = f"{n} batch{'es' * (n != 1)} decoded"
    return f"stopped serving on http://{args.host}:{args.port}/ ({decoded})"


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)

    def body() -> None:
        try:
            from aiohttp import web
        except ImportError:
            raise UsageError('serve needs aiohttp: pip install -e ".[serve]"') from None
        options, search = load_options(args), search_options(args)
        check_threads(args.threads)
        if options.workers > 1:
            raise UsageError("serve decodes in its own process: leave out --workers")
        limits = Limits(args.max_sentences, args.max_chars, args.max_batch, args.max_wait_ms,
                        max_queue=args.max_queue)  # fmt: skip
        configure_cpu(args.threads)
        sock = bound_socket(args.host, args.port)  # a port in use: said before the loading
        models = load_served(args.checkpoints, options, search)
        info = health_info(search)
        app = make_app(models, limits, info)
        show = lambda _: print(banner(args, models), flush=True)  # noqa: E731 - once it listens
        web.run_app(app, sock=sock, print=show, handle_signals=True, backlog=listen_backlog(),
                    **request_log(not args.no_request_log))  # fmt: skip
        print(stopped(args, app), flush=True)

    return run_command(body)


if __name__ == "__main__":
    sys.exit(main())
