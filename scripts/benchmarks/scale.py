"""The paper's corpus size on this machine: preparing, storing and opening 4.5M sentence pairs.

    python -m scripts.benchmarks.scale corpus --pairs 4500000 --out DIR
    python -m scripts.benchmarks.scale prepare --out DIR  # first preparation, fresh cache
    python -m scripts.benchmarks.scale open --out DIR  # second run: open, 1,000 batches
    python -m scripts.benchmarks.scale tokenize --out DIR --workers 1,2  # Moses on raw text
    python -m scripts.benchmarks.scale datasets --out DIR  # with Hugging Face datasets

The corpus repeats the WMT'14 sample of ``$LUONG_LIT_DATA/wmt14/tok/luong_nmt_hybrid`` (real WMT
sentence lengths, Moses-tokenised) up to ``--pairs`` pairs; the raw-text variant repeats the
first 20,000 lines of Europarl v7. Each step runs in its own process (as a user would run it)
and prints one JSON line; peak memory is the process's high-water mark (``VmHWM``), with its
anonymous and file-backed parts (the store's pages are file-backed: shared, and reclaimable).
"""

from __future__ import annotations

import argparse
import gzip
import itertools
import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from luong_lit.data.sources.fetch import local_mirror

REPO = Path(__file__).resolve().parents[2]
SAMPLE = "wmt14/tok/luong_nmt_hybrid/train.10k.{lang}.gz"
RAW = "wmt14/train/europarl_v7_head20k/europarl-v7.de-en.head20k.{lang}.gz"
DEV = "wmt14/tok/luong_nmt_hybrid/valid.100.{lang}.gz"


def data_root() -> Path:
    return local_mirror("scripts.benchmarks.scale")


def repeat_corpus(template: str, out: Path, name: str, pairs: int) -> None:
    """``out/{name}.{en,de}.gz``: the template's lines repeated up to ``pairs`` lines."""
    for lang in ("en", "de"):
        with gzip.open(data_root() / template.format(lang=lang), "rt", encoding="utf-8") as fh:
            lines = fh.readlines()
        with gzip.open(out / f"{name}.{lang}.gz", "wt", encoding="utf-8", compresslevel=1) as fh:
            fh.writelines(itertools.islice(itertools.cycle(lines), pairs))


def overrides(out: Path, name: str, tokenizer: str = "none") -> list[str]:
    """The training config of the benchmark corpus: the paper's 50K vocabularies, 50 words."""
    return [
        "data=files",
        f"data.train.src={out}/{name}.en.gz",
        f"data.train.tgt={out}/{name}.de.gz",
        f"data.dev.src={out}/dev.en.gz",
        f"data.dev.tgt={out}/dev.de.gz",
        "data.src_lang=en",
        "data.tgt_lang=de",
        f"data.tokenizer={tokenizer}",
        "data.vocab_size=50000",
        "data.max_len=50",
        "data.batch_size=128",
    ]


def run_child(code: str, cache: Path, extra_env: dict | None = None) -> dict:
    """Run ``code`` in a fresh interpreter (timed from before it starts); its last line is JSON."""
    env = {
        **os.environ,
        "LUONG_LIT_CACHE": str(cache),
        "PYTHONWARNINGS": "ignore",
        **(extra_env or {}),
    }
    t0 = time.time()
    res = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
    )
    if res.returncode:
        raise SystemExit(res.stderr[-3000:])
    out = json.loads(res.stdout.strip().splitlines()[-1])
    out["wall_s"] = round(time.time() - t0, 1)
    out["started_at"] = t0
    return out


MEMORY = """
def memory():
    status = dict(line.split(":", 1) for line in open("/proc/self/status"))
    mib = lambda k: int(status[k].split()[0]) / 1024
    return {"peak_mib": mib("VmHWM"), "anon_mib": mib("RssAnon"), "file_mib": mib("RssFile")}
"""


def cmd_corpus(args) -> dict:
    args.out.mkdir(parents=True, exist_ok=True)
    repeat_corpus(SAMPLE, args.out, "train", args.pairs)
    repeat_corpus(RAW, args.out, "raw", args.raw_pairs)
    repeat_corpus(DEV, args.out, "dev", 100)
    size = sum(p.stat().st_size for p in args.out.glob("*.gz"))
    return {"step": "corpus", "pairs": args.pairs, "raw_pairs": args.raw_pairs, "gz_bytes": size}


def prepare_code(ovr: list[str], workers: int | None = None) -> str:
    extra = [f"data.prepare_workers={workers}"] if workers else []
    return (
        MEMORY
        + f"""
import json, resource, time
from luong_lit.data.loading.datamodule import corpus_datamodule
from luong_lit.config import compose
from luong_lit.data.store.prepare import ensure_store
t0 = time.perf_counter()
dm = corpus_datamodule(compose({ovr + extra!r}).data)
store = ensure_store(dm.corpus_spec(), dm.tokenisation.prepare_workers, progress=False)
children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
print(json.dumps({{"seconds": time.perf_counter() - t0, "store": str(store.path),
                   "stats": store.meta["stats"], "workers_peak_mib": children, **memory()}}))
"""
    )


def cmd_prepare(args) -> dict:
    cache = args.out / "cache"
    shutil.rmtree(cache, ignore_errors=True)
    res = run_child(prepare_code(overrides(args.out, "train")), cache)
    size = sum(p.stat().st_size for p in Path(res["store"]).iterdir())
    return {"step": "prepare", "store_bytes": size, **res}


OPEN = """
import itertools, json, time
import lightning, torch
base = memory()  # the training process before any data: torch and Lightning imported
import hydra
from luong_lit.config import compose
dm = hydra.utils.instantiate(compose({ovr!r}).data)
dm.setup("fit")
loader = dm.train_dataloader()
batches = iter(loader)
next(batches)
first = time.time()
for _ in itertools.islice(batches, 999):
    pass
print(json.dumps({{"first_batch_at": first, "batches": 1000, "after_imports": base, **memory(),
                   "pairs": len(dm.train_store), "batches_per_epoch": len(loader)}}))
"""


def cmd_open(args) -> dict:
    code = MEMORY + OPEN.format(ovr=overrides(args.out, "train"))
    res = run_child(code, args.out / "cache")
    res["first_batch_s"] = round(res.pop("first_batch_at") - res["started_at"], 2)
    return {"step": "open", **res}


def cmd_tokenize(args) -> dict:
    out: dict = {"step": "tokenize"}
    for workers in args.workers:
        res = run_child(
            prepare_code(overrides(args.out, "raw", "moses"), workers),
            args.out / f"cache-moses-{workers}",
        )
        shutil.rmtree(args.out / f"cache-moses-{workers}", ignore_errors=True)
        sentences = 2 * res["stats"]["pairs_read"]
        out["pairs"] = res["stats"]["pairs_read"]
        seconds = res["stats"]["seconds_tokenise"]
        out[f"workers_{workers}"] = {
            "tokenise_s": seconds,
            "sentences_per_s": round(sentences / seconds),
        }
    if len(args.workers) == 2:
        a, b = (out[f"workers_{w}"]["sentences_per_s"] for w in args.workers)
        out["speedup"] = round(b / a, 2)
    return out


def cmd_datasets(args) -> dict:
    """The same corpus through Hugging Face ``datasets`` (``pip install datasets``)."""
    from scripts.benchmarks import scale_datasets

    cache, prep = args.out / "hf", {}
    if not args.reuse:
        shutil.rmtree(cache, ignore_errors=True)
        code = scale_datasets.PREPARE.format(out=str(args.out), workers=args.workers[-1])
        prep = run_child(code, cache)
    opened = run_child(scale_datasets.OPEN.format(out=str(args.out)), cache)
    opened["first_batch_s"] = round(opened.pop("first_batch_at") - opened["started_at"], 2)
    size = sum(p.stat().st_size for p in (cache / "store").rglob("*") if p.is_file())
    return {"step": "datasets", "prepare": prep, "open": opened, "store_bytes": size}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("step", choices=("corpus", "prepare", "open", "tokenize", "datasets"))
    ap.add_argument("--out", type=Path, required=True, help="directory of the corpus and caches")
    ap.add_argument("--pairs", type=int, default=4_500_000)
    ap.add_argument("--raw-pairs", type=int, default=200_000)
    ap.add_argument(
        "--workers", default="1,2", help="worker counts for tokenize (and datasets: the last)"
    )
    ap.add_argument("--reuse", action="store_true", help="datasets: open the store built before")
    args = ap.parse_args()
    args.workers = [int(w) for w in args.workers.split(",")]
    steps = {"corpus": cmd_corpus, "prepare": cmd_prepare, "open": cmd_open}
    steps.update(tokenize=cmd_tokenize, datasets=cmd_datasets)
    step = steps[args.step]
    result = step(args)
    result.pop("started_at", None)
    print(json.dumps(result))


if __name__ == "__main__":
    from luong_lit.cli import run_command  # a missing mirror or bad input: one line, exit 2

    sys.exit(run_command(main))
