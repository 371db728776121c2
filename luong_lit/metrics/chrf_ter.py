"""chrF, chrF++ and TER beside BLEU: sacreBLEU's ``CHRF()``, ``CHRF(word_order=2)`` and ``TER()``
with their default settings (:mod:`luong_lit.metrics.signatures` gives each one's signature).

They read the lines BLEU reads:

* the tokenised lines of the kit's tokenised BLEU (:func:`~luong_lit.metrics.bleu.bleu_lines`:
  subword pieces joined into words, ``##AT##-##AT##`` rejoined into ``-``): ``val/chrf``,
  ``val/chrfpp`` and ``val/ter`` during training, the test figures of ``results.json`` and
  ``evaluate``'s ``chrf_tok``, ``chrfpp_tok`` and ``ter_tok``;
* the detokenised lines of its sacreBLEU 13a BLEU (:func:`~luong_lit.metrics.bleu.detokenized`),
  where ``evaluate`` has them: ``chrf_detok``, ``chrfpp_detok`` and ``ter_detok``.

chrF is a character n-gram F-score (n = 1..6, recall weighted twice), case-sensitive, spaces left
out; chrF++ adds word unigrams and bigrams. TER is the edits (with block shifts) per reference
word, in per cent, case ignored (sacreBLEU's default: its signature says ``case:lc``). Higher
chrF is better, lower TER is.

chrF, like BLEU, is a function of statistics summed over the sentences, so a resampled test set
is scored from its sentences' statistics (:func:`chrf_stats`, :func:`chrf_of_stats`; the paired
tests of :mod:`luong_lit.metrics.significance`). sacreBLEU computes them only through two
non-public methods, which its own paired tests use; each is called in one function here.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache

import numpy as np

from luong_lit.metrics.bleu import (
    bleu_lines,
    check_lengths,
    corpus_bleu_tok,
    detokenized,
    rejoin_hyphens,
)
from luong_lit.metrics.sacrebleu_internals import chrf_from_stats, chrf_sentence_stats
from luong_lit.metrics.signatures import sacrebleu_metric
from luong_lit.reports import figure_name

NAMES = ("chrf", "chrfpp", "ter")  # the scores, as the logs and reports name them
CHRF_NAMES = ("chrf", "chrfpp")  # the ones resampled from sentence statistics


def scored_lines(hyps: Sequence[str], refs: Sequence[str], rejoin: bool) -> tuple[list, list]:
    """The lines the scores read: ``##AT##-##AT##`` rejoined into ``-`` with ``rejoin``."""
    check_lengths(hyps, refs)
    if not rejoin:
        return list(hyps), list(refs)
    return [rejoin_hyphens(h) for h in hyps], [rejoin_hyphens(r) for r in refs]


def corpus_chrf_ter(
    hyps: Sequence[str], refs: Sequence[str], rejoin: bool = True, names: Sequence[str] = NAMES
) -> dict:
    """``{"chrf": ..., "chrfpp": ..., "ter": ...}`` (those of ``names``) of ``hyps`` against
    ``refs`` (one reference a line), as ``python -m sacrebleu REF -i HYP -m chrf ter``
    (``--chrf-word-order 2`` for chrF++) scores the same lines; ``##AT##-##AT##`` is rejoined
    first, as tokenised BLEU does. chrF is read from chrF++'s statistics, whose first orders are
    chrF's (character n-grams; one reference a line, so the same reference is the best for
    both): one pass over the lines for the two, the same figures to the last digit as two
    ``corpus_score`` calls."""
    hyps, refs = scored_lines(hyps, refs, rejoin)
    found = {}
    if hyps and set(CHRF_NAMES) & set(names):
        summed = _stats(hyps, refs, "chrfpp").sum(0)  # (3 * (6 + 2),)
        chars = 3 * _chrf("chrf").char_order
        found = {"chrf": chrf_from_stats(_chrf("chrf"), summed[:chars]),
                 "chrfpp": chrf_from_stats(_chrf("chrfpp"), summed)}  # fmt: skip
    for n in names:  # TER, and sacreBLEU's own figures of no lines
        if n not in found:
            found[n] = float(sacrebleu_metric(n).corpus_score(hyps, [refs]).score)
    return {n: found[n] for n in names}


def words_scores(outputs, ref_tokens, tokenizer=None) -> dict[str, float]:
    """Tokenised BLEU, chrF, chrF++ and TER of each output (``{decoding: translations}``, word
    lists: ``greedy``, or ``beam`` and ``beam_unk``, the same after unknown-word replacement)
    against ``ref_tokens``, on the lines BLEU counts (:func:`~luong_lit.metrics.bleu.bleu_lines`),
    under the names a run's test figures have (:func:`luong_lit.reports.figure_name`:
    ``bleu_greedy``, ``chrf_beam_unk``, ...)."""
    scores: dict[str, float] = {}
    for decoding, output in outputs.items():
        if output is None:
            continue
        hyps, refs = bleu_lines(output, tokenizer), bleu_lines(ref_tokens[: len(output)], tokenizer)
        found = {"bleu": corpus_bleu_tok(hyps, refs), **corpus_chrf_ter(hyps, refs)}
        scores.update({figure_name(m, decoding): v for m, v in found.items()})
    return scores


def text_scores(words, refs, lang: str, tokenizer=None, raw_refs=None) -> dict[str, float]:
    """``evaluate``'s scores of output tokens against ``refs`` (lines of the words BLEU counts):
    ``bleu_tok`` and ``bleu_detok`` (sacreBLEU ``13a`` on detokenised text), then chrF,
    chrF++ and TER of the tokenised lines (``chrf_tok``, ...) and of the detokenised ones
    (``chrf_detok``, ...). ``raw_refs``, where given, are the detokenised references."""
    import sacrebleu

    text = bleu_lines(words, tokenizer)
    if raw_refs:
        hyps, detok_refs = detokenized(text, raw_refs, lang, refs_detokenized=True)
    else:
        hyps, detok_refs = detokenized(text, refs, lang)
    scores = {
        "bleu_tok": corpus_bleu_tok(text, refs),
        "bleu_detok": float(sacrebleu.corpus_bleu(hyps, [detok_refs], tokenize="13a").score),
    }
    for kind, found in (("tok", corpus_chrf_ter(text, refs)),
                        ("detok", corpus_chrf_ter(hyps, detok_refs, rejoin=False))):  # fmt: skip
        scores.update({f"{name}_{kind}": value for name, value in found.items()})
    return scores


@cache
def _chrf(name: str):
    """The sacreBLEU metric of ``chrf`` or ``chrfpp``, kept: scoring statistics leaves no state."""
    if name not in CHRF_NAMES:
        raise ValueError(f"no sentence statistics for {name!r}: one of {', '.join(CHRF_NAMES)}")
    return sacrebleu_metric(name)


def chrf_stats(hyps: Sequence[str], refs: Sequence[str], name: str = "chrf") -> np.ndarray:
    """The chrF (``name="chrfpp"``: chrF++) statistics of each line of ``hyps`` against its
    reference, ``##AT##`` rejoined on both sides: an ``(N, 3 * orders)`` integer array, per
    character (then word) n-gram order the hypothesis, reference and matched n-grams, as
    sacreBLEU sums them over a corpus (its non-public ``_extract_corpus_statistics``)."""
    return _stats(*scored_lines(hyps, refs, rejoin=True), name)


def _stats(hyps: Sequence[str], refs: Sequence[str], name: str) -> np.ndarray:
    metric = _chrf(name)
    columns = 3 * (metric.char_order + metric.word_order)
    rows = chrf_sentence_stats(metric, hyps, refs) if hyps else []
    return np.array(rows, dtype=np.int64).reshape(len(hyps), columns)


def chrf_of_stats(summed: Sequence[int], name: str = "chrf") -> float:
    """chrF (or chrF++) of one set of summed :func:`chrf_stats`: what sacreBLEU's
    ``corpus_score`` gives on the lines summed (its non-public ``_compute_score_from_stats``)."""
    return chrf_from_stats(_chrf(name), summed)
