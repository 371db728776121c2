"""Where in a translation a model's words are right: BLEU's parts, and word precision by third.

    LUONG_LIT_DATA=MIRROR python -m scripts.studies.ngram_position CKPT [CKPT ...] \
        [--test test_2016_flickr] [--beam 5]

Decodes each checkpoint on the test set (beam search, raw scores, as ``evaluate`` does) and
prints one JSON line per checkpoint: tokenised BLEU with its four n-gram precisions, brevity
penalty and length ratio (sacreBLEU's own statistics), and the word precision of each third of
the output (first, middle, last; a word belongs to the third that holds its centre). A word of
a translation counts as right when the reference still holds an unmatched copy of it, matched
left to right (BLEU's clipping, by position).

Used for the source-reversal step of Table 1 (results log, "The paper's ladders"): does the
step change the length of the translations, or which part of them is right?
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from collections.abc import Sequence

import torch

from luong_lit.checkpoint import load_model
from luong_lit.data.loading.model_data import load_split
from luong_lit.decoding.search import BeamSearch
from luong_lit.inference import Inference
from luong_lit.metrics.bleu import corpus_bleu_tok_score, rejoin_hyphens


def precision_by_third(hyps: Sequence[Sequence[str]], refs: Sequence[Sequence[str]]) -> list:
    """Percent of the words in each third of the translations (by relative position) that
    match an unmatched reference word, matched left to right; ``None`` for an empty third."""
    hits, totals = [0, 0, 0], [0, 0, 0]
    for hyp, ref in zip(hyps, refs, strict=True):
        left = Counter(ref)
        for i, word in enumerate(hyp):
            third = 3 * (2 * i + 1) // (2 * len(hyp))  # the third that holds word i's centre
            totals[third] += 1
            if left[word] > 0:
                hits[third] += 1
                left[word] -= 1
    return [100.0 * h / t if t else None for h, t in zip(hits, totals, strict=True)]


def ngram_report(hyps: Sequence[str], refs: Sequence[str]) -> dict:
    """Tokenised BLEU's parts (:func:`~luong_lit.metrics.bleu.corpus_bleu_tok_score`) and
    :func:`precision_by_third`."""
    b = corpus_bleu_tok_score(hyps, refs)
    return {
        "bleu": b.score,
        "precisions": list(b.precisions),
        "bp": b.bp,
        "length_ratio": b.sys_len / b.ref_len,
        "precision_by_third": precision_by_third(
            [rejoin_hyphens(h).split() for h in hyps], [rejoin_hyphens(r).split() for r in refs]
        ),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("checkpoints", nargs="+")
    ap.add_argument("--test", default="test_2016_flickr")
    ap.add_argument("--beam", type=int, default=5)
    args = ap.parse_args()
    torch.set_flush_denormal(True)
    for path in args.checkpoints:
        net, src_vocab, tgt_vocab, meta = load_model(path)
        split = load_split(meta, args.test, src_vocab, tgt_vocab).split
        inference = Inference(net, tgt_vocab)
        out = inference.decode(split.src_ids, search=BeamSearch(beam=args.beam), batch_size=64)
        hyps = [" ".join(w) for w in inference.words(out)]
        refs = [" ".join(t) for t in split.tgt_tokens]
        print(json.dumps({"checkpoint": path, "test": args.test, **ngram_report(hyps, refs)}))


if __name__ == "__main__":
    main()
