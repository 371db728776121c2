"""Load on the translation server: N concurrent clients on localhost, batching on and off; and
the attention page's requests with one model served and with two side by side.

    python -m scripts.benchmarks.serve_load CKPT --clients 16 --requests 400 [--beam 5]
    python -m scripts.benchmarks.serve_load CKPT --side-by-side --requests 100
    python -m scripts.benchmarks.serve_load CKPT --burst 1000 [--bursts 2] [--max-queue Q]

Starts ``python -m luong_lit serve CKPT`` twice, with batching (``--max-batch 64
--max-wait-ms 10``) and without (``--max-batch 1 --max-wait-ms 0``); each time ``--clients``
threads send one raw sentence per request (test_2016_flickr's English, in turn) until
``--requests`` have been answered. Prints one JSON line per setting: sentences/s, and p50 / p99
latency in milliseconds. The server runs with ``--threads`` torch threads; the clients are
Python threads in this process (the standard library's HTTP client).

``--side-by-side`` starts ``serve CKPT`` and ``serve a=CKPT b=CKPT`` in turn and sends the page's
requests (``POST /attention``, one sentence each, one client): to the one model; to model ``a``
of the pair alone; and, as the page does, to ``a`` and ``b`` at once for each sentence. Prints the
mean milliseconds per request of each, and their ratios to the one model alone.

``--burst N`` starts ``serve CKPT`` (batching on; ``--max-queue Q`` if given) and, ``--bursts``
times, opens N connections at once, each a client thread that sends one sentence
(:func:`scripts.serve_client.burst`). Prints one JSON line per burst: how many were
answered 200, 503 (each with ``Retry-After``), reset by the server or not answered, and the
seconds the burst took.
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import subprocess
import sys
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from luong_lit.data.sources.fetch import local_mirror
from scripts.serve_client import burst, free_port, wait_until_up

REPO = Path(__file__).resolve().parents[2]
SETTINGS = {
    "batching": ["--max-batch", "64", "--max-wait-ms", "10"],
    "none": ["--max-batch", "1", "--max-wait-ms", "0"],
}


def sentences() -> list[str]:
    root = local_mirror("scripts.benchmarks.serve_load")
    with gzip.open(root / "multi30k" / "raw" / "test_2016_flickr.en.gz", "rt") as fh:
        return fh.read().splitlines()


def start(ckpt: str | list[str], extra: list[str], args) -> tuple[subprocess.Popen, int]:
    port = free_port()
    models = [ckpt] if isinstance(ckpt, str) else ckpt
    cmd = [sys.executable, "-m", "luong_lit", "serve", *models, "--port", str(port)]
    cmd += ["--beam", str(args.beam), "--threads", str(args.threads), "--no-request-log", *extra]
    proc = subprocess.Popen(cmd, cwd=REPO, stderr=subprocess.DEVNULL)
    try:
        wait_until_up(proc, port)
    except RuntimeError as err:
        sys.exit(str(err))
    return proc, port


def one(port: int, text: str, path: str = "/translate", **fields) -> float:
    t0 = time.perf_counter()
    body = json.dumps({"text": text, **fields}).encode()
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=body, method="POST")
    with urllib.request.urlopen(req, timeout=600) as res:
        res.read()
    return time.perf_counter() - t0


def load(port: int, texts: list[str], args) -> dict:
    batch = [texts[i % len(texts)] for i in range(args.requests)]
    t0 = time.perf_counter()
    with ThreadPoolExecutor(args.clients) as pool:
        latencies = sorted(pool.map(lambda t: one(port, t), batch))
    wall = time.perf_counter() - t0
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/health") as res:
        batches = json.loads(res.read())["batches"]
    return {
        "sentences_per_s": round(len(batch) / wall, 1),
        "p50_ms": round(1000 * statistics.median(latencies), 1),
        "p99_ms": round(1000 * latencies[int(0.99 * (len(latencies) - 1))], 1),
        "decodes": batches,
    }


def page_requests(port: int, texts: list[str], models: list[str | None]) -> float:
    """Mean milliseconds per ``/attention`` request; with several models, each sentence's
    requests go out at once, as the page sends them."""
    spent, count = 0.0, 0
    with ThreadPoolExecutor(max(1, len(models))) as pool:
        for text in texts:
            fields = [{"text": text, **({"model": m} if m else {})} for m in models]
            spent += sum(pool.map(lambda f: one(port, path="/attention", **f), fields))
            count += len(models)
    return 1000 * spent / count


def side_by_side(args, texts: list[str]) -> dict:
    texts = texts[: args.requests]
    results = {}
    for name, ckpts, models in (
        ("one model", args.checkpoint, [None]),
        ("two models", [f"a={args.checkpoint}", f"b={args.checkpoint}"], ["a"]),
        (
            "two models, the page's pair",
            [f"a={args.checkpoint}", f"b={args.checkpoint}"],
            ["a", "b"],
        ),
    ):
        proc, port = start(ckpts, SETTINGS["batching"], args)
        try:
            page_requests(port, texts[:5], models)  # warm-up
            results[name] = page_requests(port, texts, models)
        finally:
            proc.terminate()
            proc.wait(30)
    alone = results["one model"]
    return {
        "ms_per_request": {k: round(v, 1) for k, v in results.items()},
        "ratio_to_one_model": {k: round(v / alone, 2) for k, v in results.items()},
    }


def bursts(args, texts: list[str]) -> None:
    """``--bursts`` bursts of ``--burst`` simultaneous connections, one JSON line each."""
    extra = SETTINGS["batching"] + (["--max-queue", str(args.max_queue)] if args.max_queue else [])
    proc, port = start(args.checkpoint, extra, args)
    try:
        one(port, texts[0])  # warm-up
        for i in range(args.bursts):
            t0 = time.perf_counter()
            counts = burst(port, args.burst, texts[i % len(texts)])
            wall = round(time.perf_counter() - t0, 1)
            print(json.dumps({"burst": args.burst, "max_queue": args.max_queue, **counts,
                              "seconds": wall}), flush=True)  # fmt: skip
    finally:
        proc.terminate()
        proc.wait(30)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("checkpoint")
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--requests", type=int, default=400)
    ap.add_argument("--beam", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--side-by-side", action="store_true", help="one model against two (page)")
    ap.add_argument("--burst", type=int, help="N connections opened at once: answered or reset")
    ap.add_argument("--bursts", type=int, default=1, help="how many bursts, one after another")
    ap.add_argument("--max-queue", type=int, help="the server's --max-queue (unset: its own)")
    args = ap.parse_args(argv)
    texts = sentences()
    if args.burst:
        bursts(args, texts)
        return
    if args.side_by_side:
        print(
            json.dumps({"requests": args.requests, "beam": args.beam, **side_by_side(args, texts)})
        )
        return
    for name, extra in SETTINGS.items():
        proc, port = start(args.checkpoint, extra, args)
        try:
            one(port, texts[0])  # warm-up
            result = load(port, texts, args)
        finally:
            proc.terminate()
            proc.wait(30)
        print(json.dumps({"setting": name, "clients": args.clients, **result}), flush=True)


if __name__ == "__main__":
    from luong_lit.cli import run_command  # a missing mirror or bad input: one line, exit 2

    sys.exit(run_command(main))
