"""Everything one checkpoint outputs, and the losses of 60 training steps, written to files, so
that two versions of the kit can be compared byte for byte (``diff -r A B``).

    LUONG_LIT_DATA=MIRROR python -m scripts.benchmarks.same_outputs CKPT --out OUT [--sentences 200]

Run it in each tree (``git worktree add OLD <commit>``; ``cd OLD && python -m ...``) with the
same checkpoint. Writes under OUT: ``translate_*.txt`` (greedy, beam 5, n-best 3, unk
replacement, 8-bit products, the reference engine, attention shown), ``evaluate.json``
(its report), ``align.json`` (RWTH, forced decoding), ``api.json`` (``luong_lit.load``:
translate, n_best, attention, score, align), ``server.json`` (``serve``'s answers) and
``train_losses.csv`` (60 steps of the main job: 2 epochs of 30 batches, with dropout, annealing
and clipping). Timings and absolute paths are left out of every file.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import subprocess
import sys
import urllib.request
from pathlib import Path

from luong_lit.data.sources.fetch import local_mirror

TRANSLATE = {
    "greedy": ["--beam", "1"],
    "beam5": ["--beam", "5"],
    "nbest3": ["--beam", "5", "--n-best", "3"],
    "unk": ["--beam", "5", "--replace-unk"],
    "int8_output": ["--beam", "5", "--int8", "output"],
    "int8_all": ["--beam", "1", "--int8", "all"],
    "reference": ["--beam", "5", "--engine", "reference"],
    "ensemble": ["--beam", "5", "--replace-unk", "--combine", "log_probs"],
    "attention": ["--beam", "1", "--show-attention"],
}


def kit(*args: str, stdin: str | None = None) -> str:
    res = subprocess.run(
        [sys.executable, "-m", "luong_lit", *args], input=stdin, capture_output=True, text=True,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )  # fmt: skip
    if res.returncode:
        raise SystemExit(f"luong_lit {' '.join(args)} failed:\n{res.stderr[-3000:]}")
    return res.stdout


def scrub(text: str, *paths: str) -> str:
    """Absolute paths and timings out of a text."""
    for p in paths:
        text = text.replace(str(Path(p).resolve()), "PATH").replace(str(p), "PATH")
    return re.sub(r'"(seconds|elapsed|time|wall)[^"]*": [0-9.e+-]+', r'"\1": 0', text)


def sources(n: int) -> list[str]:
    path = local_mirror("same_outputs") / "multi30k/tok/test_2016_flickr.lc.norm.tok.en.gz"
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return fh.read().splitlines()[:n]


def translations(ckpt: str, out: Path, text: str) -> None:
    for name, args in TRANSLATE.items():
        ckpts = [ckpt, ckpt] if name == "ensemble" else [ckpt]
        got = kit("translate", *ckpts, "--pretokenized", "--quiet", *args, stdin=text)
        (out / f"translate_{name}.txt").write_text(got, "utf-8")


def reports(ckpt: str, out: Path) -> None:
    tmp = out / "tmp"
    kit("evaluate", ckpt, "--test", "test_2016_flickr", "--quiet", "--out", str(tmp))
    report = (tmp / "eval_test_2016_flickr.json").read_text("utf-8")
    (out / "evaluate.json").write_text(scrub(report, ckpt), "utf-8")
    kit("align", ckpt, "--rwth", "--out", str(tmp))
    (out / "align.json").write_text(scrub((tmp / "align.json").read_text("utf-8"), ckpt), "utf-8")
    for f in tmp.iterdir():
        f.unlink()
    tmp.rmdir()


def api(ckpt: str, lines: list[str]) -> dict:
    import luong_lit

    model = luong_lit.load(ckpt, beam=5, replace_unk=True, pretokenized=True)
    att = model.attention(lines[0])
    return {
        "translate": model.translate(lines),
        "greedy": model.translate(lines, beam=1),
        "n_best": [[(h.text, round(h.score, 5)) for h in hs] for hs in model.n_best(lines, 3)],
        "attention": [att.source, att.target, [[round(w, 6) for w in r] for r in att.weights]],
        "score": [round(s, 5) for s in model.score(lines, model.translate(lines))],
        "align": [sorted(a) for a in model.align(lines, model.translate(lines, beam=1))],
    }


def server(ckpt: str, lines: list[str]) -> list:
    from scripts.serve_client import free_port, wait_until_up

    port = free_port()
    cmd = [sys.executable, "-m", "luong_lit", "serve", ckpt, "--port", str(port), "--pretokenized"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    answers = []
    try:
        wait_until_up(proc, port)
        for path, body in [
            ("/translate", {"text": lines[:8]}),
            ("/translate", {"text": lines[:8], "beam": 1, "n_best": 1, "replace_unk": True}),
            ("/translate", {"text": lines[:4], "n_best": 3}),
            ("/attention", {"text": lines[0]}),
        ]:
            req = urllib.request.Request(f"http://127.0.0.1:{port}{path}",
                                         data=json.dumps(body).encode(), method="POST")  # fmt: skip
            with urllib.request.urlopen(req, timeout=120) as res:
                answers.append(json.loads(res.read()))
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    return answers


def losses(out: Path) -> None:
    run = out / "train_run"
    subprocess.run(
        [sys.executable, "-m", "luong_lit.train", "trainer.max_epochs=2",
         "trainer.limit_train_batches=30", "trainer.log_every_n_steps=1",
         "test_after_training=false", "callbacks.greedy_bleu.every_n_epochs=0",
         "trainer.limit_val_batches=2", "threads=1", "logger=csv",
         "trainer.enable_progress_bar=false", f"hydra.run.dir={run}"],
        check=True, capture_output=True,
    )  # fmt: skip
    rows = (run / "csv" / "metrics.csv").read_text("utf-8").splitlines()
    keep = [r for r in rows if "tok_per_s" not in r.split(",")[0]]
    header = keep[0].split(",")
    drop = [i for i, h in enumerate(header) if "per_s" in h]
    text = "\n".join(",".join(c for i, c in enumerate(r.split(",")) if i not in drop) for r in keep)
    (out / "train_losses.csv").write_text(text + "\n", "utf-8")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("checkpoint")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--sentences", type=int, default=200, help="test sentences translated")
    ap.add_argument("--skip", nargs="*", default=[], help="parts to leave out: translate, "
                    "reports, api, server, train")  # fmt: skip
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    lines = sources(args.sentences)
    text = "\n".join(lines) + "\n"
    if "translate" not in args.skip:
        translations(args.checkpoint, args.out, text)
    if "reports" not in args.skip:
        reports(args.checkpoint, args.out)
    if "api" not in args.skip:
        found = api(args.checkpoint, lines[:20])
        (args.out / "api.json").write_text(json.dumps(found, indent=1, ensure_ascii=False))
    if "server" not in args.skip:
        found = server(args.checkpoint, lines)
        (args.out / "server.json").write_text(json.dumps(found, indent=1, ensure_ascii=False))
    if "train" not in args.skip:
        losses(args.out)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    from luong_lit.cli import run_command  # a missing mirror or bad input: one line, exit 2

    sys.exit(run_command(main))
