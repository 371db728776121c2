"""Serve a model (or an ensemble) over HTTP: ``pip install -e ".[serve]"``, then

    python -m luong_lit serve CKPT [CKPT ...] [--port 8080] [--beam 5] [--replace-unk] ...
    curl -s localhost:8080/translate -d '{"text": ["A man is riding a bike."]}'

Raw text in, natural text out, as ``translate`` does, with the same decoding options. Requests
arriving together are decoded as one batch (``--max-batch`` sentences, ``--max-wait-ms``).
SIGTERM or Ctrl-C: the server stops accepting, answers what it holds, and exits.
See :mod:`luong_lit.serving` for the API.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from luong_lit.cli import (
    add_decoding_args,
    add_input_args,
    check_n_best,
    check_threads,
    decode_options,
    run_command,
)
from luong_lit.cli import parser as make_parser
from luong_lit.errors import UsageError
from luong_lit.runtime import configure_cpu
from luong_lit.serving import Limits, make_app
from luong_lit.translator import Translator

log = logging.getLogger("luong_lit.serve")


def parser() -> argparse.ArgumentParser:
    ap = make_parser("serve", __doc__)
    add_decoding_args(ap)
    add_input_args(ap, max_src_len=100)
    ap.add_argument("--host", default="127.0.0.1", help="address to listen on")
    ap.add_argument("--port", type=int, default=8080, help="port to listen on")
    ap.add_argument(
        "--n-best", type=int, default=1, help='N > 1: each answer is N {"text", "score"} objects'
    )
    ap.add_argument("--max-sentences", type=int, default=64, help="per request")
    ap.add_argument("--max-chars", type=int, default=1000, help="per sentence")
    ap.add_argument("--max-batch", type=int, default=64, help="sentences decoded together")
    ap.add_argument(
        "--max-wait-ms", type=float, default=10.0, help="how long a batch waits to fill up"
    )
    return ap


def limits_of(args) -> Limits:
    for name in ("max_sentences", "max_chars", "max_batch"):
        if getattr(args, name) < 1:
            raise UsageError(f"--{name.replace('_', '-')} must be at least 1")
    if args.max_wait_ms < 0:
        raise UsageError("--max-wait-ms must be at least 0")
    return Limits(args.max_sentences, args.max_chars, args.max_batch, args.max_wait_ms)


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)

    def body() -> None:
        try:
            from aiohttp import web
        except ImportError:
            raise UsageError('serve needs aiohttp: pip install -e ".[serve]"') from None
        options = decode_options(args)
        check_n_best(options, args.n_best)
        check_threads(args.threads)
        limits = limits_of(args)
        configure_cpu(args.threads)
        translator = Translator.load(args.checkpoints, options)
        info = {"checkpoints": [str(c) for c in args.checkpoints], "beam": args.beam}
        info["n_best"] = args.n_best
        if args.n_best > 1:
            n = args.n_best

            def translate(lines):
                lists = translator.n_best(lines, n)
                return [[{"text": t, "score": round(sc, 4)} for t, sc in hyps] for hyps in lists]
        else:
            translate = translator.translate
        app = make_app(translate, limits, info)
        log.info("serving on http://%s:%d", args.host, args.port)
        web.run_app(app, host=args.host, port=args.port, print=None, handle_signals=True)

    return run_command(body)


if __name__ == "__main__":
    sys.exit(main())
