"""Prepare a training corpus once: ``python -m luong_lit prepare [data=NAME] [overrides...]``.

The config is composed as for training (``experiment=``, ``data=`` and any ``data.*`` key), and
the training corpus is tokenised in parallel, filtered by length, given its vocabularies and
written to a memory-mapped store in the cache (:mod:`luong_lit.data.store.prepare`). Training,
``evaluate`` and ``translate`` open it; they prepare it themselves if it does not exist yet.
Prints where the store is and the corpus counts beside the paper's WMT'14 counts (§4.1).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence

from luong_lit.cli import run_command
from luong_lit.config import compose
from luong_lit.data.loading.datamodule import corpus_datamodule
from luong_lit.data.store.prepare import ensure_store
from luong_lit.data.store.spec import PAPER_COUNTS

LANGUAGES = {"en": "English", "de": "German"}


def counts_table(meta: dict, src_lang: str, tgt_lang: str) -> str:
    """The corpus beside the paper's WMT'14 training data."""
    stats, spec = meta["stats"], meta["spec"]
    paper = {"src": PAPER_COUNTS.get(src_lang), "tgt": PAPER_COUNTS.get(tgt_lang)}

    def fmt(x) -> str:
        return "" if x is None else (f"{x / 1e6:.1f}M" if x >= 1e6 else f"{x:,.0f}")

    rows = [("pairs read", f"{stats['pairs_read']:,}", fmt(PAPER_COUNTS["pairs"]))]
    for side, lang in (("src", src_lang), ("tgt", tgt_lang)):
        rows.append(
            (f"{LANGUAGES.get(lang, lang)} words", f"{stats['words'][side]:,}", fmt(paper[side]))
        )
    rows.append((f"pairs kept (max_len {spec['max_len']})", f"{stats['pairs']:,}", ""))
    vocab = f"{stats['vocab']['src']:,} / {stats['vocab']['tgt']:,}"
    rows.append(("vocabulary src / tgt", vocab, "50,004 / 50,004"))
    lines = [f"{'':28} {'this corpus':>20} {'paper (WMT14)':>20}"]
    lines += [f"{a:28} {b:>20} {c:>20}" for a, b, c in rows]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] in (["-h"], ["--help"]):
        print(__doc__)
        return 0

    def body() -> None:
        cfg = compose(argv)
        dm = corpus_datamodule(cfg.data)  # its options checked as it is built
        t0 = time.perf_counter()
        store = ensure_store(dm.corpus_spec(), dm.tokenisation.prepare_workers, progress=True)
        print(f"store: {store.path} ({time.perf_counter() - t0:.1f} s)")
        print(counts_table(store.meta, dm.corpus.src_lang, dm.corpus.tgt_lang))

    return run_command(body)


if __name__ == "__main__":
    sys.exit(main())
