"""What a validation's scores cost on the host, beside the decoding: tokenised BLEU, and chrF,
chrF++ and TER (``callbacks.greedy_bleu.dev_scores``) as the kit computes them (chrF read from
chrF++'s statistics) and as three sacreBLEU ``corpus_score`` calls, alternated in one process.

    python -m scripts.benchmarks.dev_scores HYP REF [--repeats 5]

``HYP`` and ``REF``: one tokenised line a sentence (a kept run's ``eval_*.hyp`` and its
reference in ``results/references/``). Prints the median seconds of each, and whether the
figures are the same.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path


def three_calls(hyps: list[str], refs: list[str]) -> dict[str, float]:
    from luong_lit.metrics.chrf_ter import NAMES, scored_lines
    from luong_lit.metrics.signatures import sacrebleu_metric

    hyps, refs = scored_lines(hyps, refs, True)
    return {n: float(sacrebleu_metric(n).corpus_score(hyps, [refs]).score) for n in NAMES}


def main() -> None:
    from luong_lit.metrics.bleu import corpus_bleu_tok
    from luong_lit.metrics.chrf_ter import corpus_chrf_ter

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("hyp", type=Path)
    ap.add_argument("ref", type=Path)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    hyps = args.hyp.read_text(encoding="utf-8").splitlines()
    refs = args.ref.read_text(encoding="utf-8").splitlines()[: len(hyps)]
    ways = {
        "bleu": lambda: corpus_bleu_tok(hyps, refs),
        "chrf_chrfpp_ter_three_calls": lambda: three_calls(hyps, refs),
        "chrf_chrfpp_ter_kit": lambda: corpus_chrf_ter(hyps, refs),
        "ter": lambda: corpus_chrf_ter(hyps, refs, names=["ter"]),
    }
    seconds: dict[str, list[float]] = {k: [] for k in ways}
    for _ in range(args.repeats):
        for name, way in ways.items():
            start = time.perf_counter()
            way()
            seconds[name].append(time.perf_counter() - start)
    out = {k: round(statistics.median(v), 3) for k, v in seconds.items()}
    out["same_figures"] = three_calls(hyps, refs) == corpus_chrf_ter(hyps, refs)
    out["sentences"] = len(hyps)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
