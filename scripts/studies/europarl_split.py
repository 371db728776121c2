"""Europarl v7 De–En, its first 20K pairs, cut into train / dev / held-out test files.

    python -m scripts.studies.europarl_split --out logs/europarl20k

Europarl's sentences are about twice as long as Multi30k's (25.7 English words a line against
13), so it is where the paper's source reversal (§4.1, "+reverse") can matter. The cut keeps
the corpus's order, so the held-out sets are whole debates the model never saw: lines
1–18000 train, 18001–19000 dev, 19001–20000 test. Writes ``{train,dev,test}.{en,de}`` (raw,
untokenised) under ``--out`` (a relative path stays relative: train from the same folder) and
prints the overrides that train on them with ``data=files``.
The corpus comes from ``LUONG_LIT_DATA`` when set, else from its official source (cached).
"""

from __future__ import annotations

import argparse
import gzip
from pathlib import Path

from luong_lit.data.sources.fetch import mirror_dir, resolve
from luong_lit.data.sources.registry import corpus_source

CUTS = {"train": (0, 18000), "dev": (18000, 19000), "test": (19000, 20000)}


def lines(lang: str) -> list[str]:
    path = resolve(corpus_source("wmt14_ende", "europarl_v7_head20k", lang, "raw"), mirror_dir())
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return fh.read().splitlines()


def overrides(out: Path, src: str = "en", tgt: str = "de") -> list[str]:
    """``data=files`` overrides that train on the cut (source ``src``, target ``tgt``)."""
    found = ["data=files", "data.tokenizer=moses", f"data.src_lang={src}", f"data.tgt_lang={tgt}"]
    for split in ("train", "dev"):
        found += [f"data.{split}.src={out}/{split}.{src}", f"data.{split}.tgt={out}/{split}.{tgt}"]
    found += [f"+data.test.europarl_test.src={out}/test.{src}"]
    return [*found, f"+data.test.europarl_test.tgt={out}/test.{tgt}"]


def write(out: Path) -> list[str]:
    """Write the six files under ``out``; returns the overrides that train on them."""
    out.mkdir(parents=True, exist_ok=True)
    for lang in ("en", "de"):
        text = lines(lang)
        for split, (a, b) in CUTS.items():
            (out / f"{split}.{lang}").write_text("\n".join(text[a:b]) + "\n", "utf-8")
    return overrides(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True, help="folder for the six files")
    ap.add_argument("--print-only", action="store_true", help="print the overrides, write nothing")
    args = ap.parse_args()
    if args.print_only:
        print(" ".join(overrides(args.out)))
        return
    print(" ".join(write(args.out)))


if __name__ == "__main__":
    main()
