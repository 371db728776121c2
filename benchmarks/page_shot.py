"""A screenshot of the attention page (``serve``'s ``/``) for a sentence, in headless Chromium.

    python -m benchmarks.page_shot global=RUN/checkpoints/best.ckpt [name=CKPT ...] \
        --text "A man in a red shirt is riding a bike down the street." --out docs/serve_page.png

Starts ``python -m luong_lit serve`` with the models given, types the sentence into the page,
presses Translate, waits for every panel, and saves the page as a PNG (the README's picture).
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys

from benchmarks.browser import Browser
from benchmarks.serve_load import REPO, free_port, wait_until_up


async def shoot(port: int, text: str, out: str, beam: int, replace_unk: bool) -> None:
    async with Browser(width=1500) as b:
        await b.open(f"http://127.0.0.1:{port}/")
        await b.eval(f"document.getElementById('beam').value = {beam}")
        if replace_unk:
            await b.click("#unk")
        await b.type_into("#text", text)
        await b.click("#go")
        n = await b.eval("fetch('/health').then(r => r.json()).then(h => h.models.length)")
        await b.wait_for(f"document.querySelectorAll('#panels .panel svg').length === {n}")
        print(await b.screenshot(out))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("models", nargs="+", help="NAME=CKPT, as serve takes them")
    ap.add_argument("--text", default="A man in a red shirt is riding a bike down the street.")
    ap.add_argument("--out", default="docs/serve_page.png")
    ap.add_argument("--beam", type=int, default=5)
    ap.add_argument("--replace-unk", action="store_true")
    args = ap.parse_args(argv)
    port = free_port()
    cmd = [sys.executable, "-m", "luong_lit", "serve", *args.models, "--port", str(port)]
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL)
    try:
        wait_until_up(proc, port)
        asyncio.run(shoot(port, args.text, args.out, args.beam, args.replace_unk))
    finally:
        proc.terminate()
        proc.wait(30)


if __name__ == "__main__":
    main()
