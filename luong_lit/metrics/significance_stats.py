"""The bootstrap's arithmetic behind :mod:`luong_lit.metrics.significance`: BLEU's sufficient
statistics taken once per sentence, test sets resampled as multiplicities, and a two-sided p and
interval from a bootstrap distribution.

A sentence's statistics are what sacreBLEU sums over a corpus: hypothesis and reference length,
and the matched and total n-grams for n = 1..4. A resampled test set is a row of multiplicities
(how often each sentence was drawn), so its summed statistics are one matrix product, and its
corpus BLEU is sacreBLEU's own :meth:`BLEU.compute_bleu` of the sums, with the smoothing of
:func:`~luong_lit.metrics.bleu.corpus_bleu_tok`: the same number ``corpus_bleu_tok`` gives on the
lines drawn. chrF and chrF++ (``metric="chrf"``, ``"chrfpp"``) are resampled alike, from their
own sentence statistics (:func:`~luong_lit.metrics.chrf_ter.chrf_stats`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np

from luong_lit.metrics.bleu import check_lengths, rejoin_hyphens
from luong_lit.metrics.chrf_ter import CHRF_NAMES, chrf_of_stats, chrf_stats

ORDER = 4  # n-grams up to 4, as BLEU counts them
# One sentence's statistics, in sacreBLEU's order: hypothesis and reference length, matched
# n-grams (n = 1..4), total n-grams (n = 1..4).
COLUMNS = 2 + 2 * ORDER


def sentence_stats(hyps: Sequence[str], refs: Sequence[str]) -> np.ndarray:
    """The BLEU statistics of each line of ``hyps`` against its reference, an ``(N, 10)`` integer
    array; ``##AT##`` is rejoined on both sides first, as :func:`corpus_bleu_tok` does."""
    from sacrebleu.metrics import BLEU

    check_lengths(hyps, refs)
    # effective_order only changes a sentence's own score, not its counts (and keeps sacreBLEU
    # from warning about sentence-level BLEU)
    metric = BLEU(tokenize="none", force=True, effective_order=True)
    rows = []
    for hyp, ref in zip(hyps, refs, strict=True):
        s = metric.sentence_score(rejoin_hyphens(hyp), [rejoin_hyphens(ref)])
        rows.append([s.sys_len, s.ref_len, *s.counts, *s.totals])
    return np.array(rows, dtype=np.int64).reshape(len(rows), COLUMNS)


def corpus_bleu(summed: np.ndarray) -> float:
    """Corpus BLEU of one set of summed statistics (sacreBLEU's ``compute_bleu``, exp smoothing,
    as ``corpus_bleu`` scores a corpus)."""
    from sacrebleu.metrics import BLEU

    values = [int(v) for v in summed]
    return float(
        BLEU.compute_bleu(
            correct=values[2 : 2 + ORDER],
            total=values[2 + ORDER :],
            sys_len=values[0],
            ref_len=values[1],
            smooth_method="exp",
        ).score
    )


def corpus_bleus(summed: np.ndarray) -> np.ndarray:
    """:func:`corpus_bleu` of every set of statistics in ``summed`` (shape ``(..., 10)``) at
    once: sacreBLEU's ``compute_bleu`` (exp smoothing, no effective order) as array arithmetic,
    since it scores one set at a time and a test draws 10,000 sets a seed (equal to it within
    float rounding: ``tests/test_significance.py``).

    ``BLEU = BP * exp(mean_n log p_n)``, ``BP = exp(1 - r/c)`` where ``c < r`` (0 where
    ``c = 0``); ``p_n = c_n / t_n``, and where ``c_n = 0``, ``1 / (2^k t_n)`` for the k-th
    such order; 0 where nothing matches or an order has no n-grams."""
    x = np.asarray(summed, dtype=float)
    sys_len, ref_len = x[..., 0], x[..., 1]
    correct, total = x[..., 2 : 2 + ORDER], x[..., 2 + ORDER :]
    with np.errstate(divide="ignore", invalid="ignore"):
        short = np.where(sys_len > 0, np.exp(1 - ref_len / sys_len), 0.0)
        bp = np.where(sys_len < ref_len, short, 1.0)
        zero = correct == 0
        smooth = np.cumprod(np.where(zero, 2.0, 1.0), axis=-1)
        precision = np.where(zero, 100.0 / (smooth * total), 100.0 * correct / total)
        logs = np.log(precision)
        mean_log = (logs[..., 0] + logs[..., 1] + logs[..., 2] + logs[..., 3]) / ORDER
        scored = bp * np.exp(mean_log)
    none = ~correct.any(axis=-1) | (total == 0).any(axis=-1)
    return np.where(none, 0.0, scored)


METRICS = ("bleu", *CHRF_NAMES)  # the scores the bootstrap resamples


def _metric(metric: str) -> str:
    if metric not in METRICS:
        raise ValueError(f"no paired test of {metric!r}: one of {', '.join(METRICS)}")
    return metric


def metric_stats(hyps: Sequence[str], refs: Sequence[str], metric: str = "bleu") -> np.ndarray:
    """Each line's statistics of ``metric`` (``bleu``: :func:`sentence_stats`; ``chrf`` or
    ``chrfpp``: :func:`~luong_lit.metrics.chrf_ter.chrf_stats`), one row a sentence."""
    if _metric(metric) == "bleu":
        return sentence_stats(hyps, refs)
    return chrf_stats(hyps, refs, metric)


def exact_scores(summed: np.ndarray, metric: str = "bleu") -> np.ndarray:
    """:func:`corpus_scores` one set at a time through sacreBLEU itself: the observed scores a
    table prints, equal to ``corpus_bleu_tok`` of the lines to the last bit."""
    if _metric(metric) != "bleu":
        return corpus_scores(summed, metric)
    flat = summed.reshape(-1, summed.shape[-1])
    return np.array([corpus_bleu(row) for row in flat], dtype=float).reshape(summed.shape[:-1])


def corpus_scores(summed: np.ndarray, metric: str = "bleu") -> np.ndarray:
    """The corpus score of ``metric`` of every set of summed statistics in ``summed`` (its last
    axis: one sentence's statistics, as :func:`metric_stats` gives them)."""
    if _metric(metric) == "bleu":
        return corpus_bleus(summed)
    one = lambda row: chrf_of_stats(row, metric)  # noqa: E731 - one set at a time
    flat = summed.reshape(-1, summed.shape[-1])
    return np.array([one(row) for row in flat], dtype=float).reshape(summed.shape[:-1])


def resampling_rng() -> np.random.Generator:
    """sacreBLEU's resampling generator: seeded 12345 unless ``SACREBLEU_SEED`` says otherwise
    (``none``: fresh entropy)."""
    seed = os.environ.get("SACREBLEU_SEED", "12345")
    return np.random.default_rng(None if seed.lower() == "none" else int(seed))


def sentence_draws(rng: np.random.Generator, n: int, n_samples: int) -> np.ndarray:
    """``n_samples`` test sets of ``n`` sentences drawn with replacement, as sacreBLEU draws them,
    written as multiplicities: an ``(n_samples, n)`` matrix of how often each sentence came."""
    idx = rng.choice(n, size=(n_samples, n), replace=True)
    flat = idx + n * np.arange(n_samples)[:, None]
    return np.bincount(flat.ravel(), minlength=n_samples * n).reshape(n_samples, n)


def two_sided(resampled: np.ndarray, observed: float) -> tuple[float, float, float]:
    """p and the 95 % interval of a difference from its bootstrap distribution ``resampled``.

    The distribution is centred at its own mean to stand in for the null (no difference), and p
    counts the resamples at least as far from that centre, on either side, as the observed
    difference, with the observed one among them: ``(k + 1) / (B + 1)`` for ``k`` of ``B``
    (Davison and Hinkley 1997, as sacreBLEU reports p), never below ``1 / (B + 1)``. The
    interval is the 2.5th to 97.5th percentile of ``d*``.
    """
    centred = np.abs(resampled - resampled.mean())
    p = (int(np.sum(centred >= abs(observed))) + 1) / (resampled.size + 1)
    low, high = np.percentile(resampled, [2.5, 97.5])
    return float(p), float(low), float(high)


def mc_error(p: float, samples: int) -> float:
    """The Monte Carlo standard error of a bootstrap p from ``samples`` draws:
    ``sqrt(p (1 - p) / B)`` (another resampling seed moves p by about this much)."""
    return float(np.sqrt(p * (1 - p) / samples))
