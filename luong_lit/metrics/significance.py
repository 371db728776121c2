"""Whether one system's BLEU differs from another's beyond chance, and by how much.

BLEU is the tokenised BLEU of the paper's tables (:func:`~luong_lit.metrics.bleu.corpus_bleu_tok`:
``##AT##`` rejoined, sacreBLEU with ``tokenize='none'``). ``metric="chrf"`` (or ``"chrfpp"``)
tests chrF (chrF++) of the same lines instead (:mod:`luong_lit.metrics.chrf_ter`); where this
text says BLEU, read the score tested. Both tests are paired bootstraps (Koehn 2004) over the
test sentences, and both are two-sided:

* :func:`paired_bootstrap`, one output per system: the test sentences are drawn with replacement
  ``n_samples`` times; the signed difference of the two corpus BLEUs on each draw, centred at its
  mean, stands in for its distribution under no difference. p is the share of draws whose
  centred difference is at least as large, either way, as the observed one, counted with the
  observed one (``(k+1)/(B+1)``, never below ``1/(B+1)``); the 95 % interval of
  the gain is the 2.5th to 97.5th percentile of the draws. (sacreBLEU's ``bs`` test, the Moses
  script's, centres the *absolute* differences instead and counts those beyond ``|d|``: one
  tail in effect, about half the two-sided p, e.g. 0.025 where a two-sided test gives 0.05.)
* :func:`two_level_bootstrap`, several seeds per system: each draw takes one draw of the
  sentences for every seed's outputs and scores the mean over seeds of each side, plus a
  t-distributed seed term sized by the seed effect's share of the variance (see the function).
  Its spread covers the seeds' variance as well as the test set's, which concatenating the
  seeds' outputs does not: pooled, another seed is just more sentences.
  Each system's mean BLEU, seed standard deviation and test-set standard error are reported
  as MultEval reports them (Clark et al. 2011).

A family of tests is corrected by Holm's step-down method, and each test is judged in words
(:mod:`luong_lit.metrics.verdicts`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from luong_lit.metrics.significance_stats import (
    corpus_scores,
    exact_scores,
    mc_error,
    metric_stats,
    resampling_rng,
    sentence_draws,
    two_sided,
)

SAMPLES = 1000  # the functions' default; ``report`` and ``paired.py`` draw 10,000


class Paired(NamedTuple):
    """The BLEU of a baseline and a system on the same sentences, the two-sided p of their
    difference, the number of sentences and the 95 % interval of the gain (``low``, ``high``)."""

    baseline: float
    system: float
    p: float
    sentences: int
    low: float = float("nan")
    high: float = float("nan")

    @property
    def gain(self) -> float:
        return self.system - self.baseline


class SeedRow(NamedTuple):
    """One system over its seeds (Clark et al. 2011): mean BLEU, the standard deviation of the
    per-seed BLEU (``nan`` with one seed), the test set's standard error (the spread of a seed's
    BLEU over sentence resamples, averaged over the seeds) and each seed's BLEU."""

    bleu: float
    seed_sd: float
    test_se: float
    per_seed: tuple[float, ...]


class SeedPaired(NamedTuple):
    """Two systems over seeds and sentences: their rows, the gain (mean over seeds, system minus
    baseline), its 95 % interval, the two-sided p and the number of test sentences."""

    baseline: SeedRow
    system: SeedRow
    gain: float
    low: float
    high: float
    p: float
    sentences: int
    samples: int = SAMPLES
    seed_se: float = 0.0
    df: float = float("inf")

    @property
    def p_error(self) -> float:
        """The Monte Carlo standard error of :attr:`p` (:func:`mc_error`)."""
        return mc_error(self.p, self.samples)


def _check(lines: Sequence[Sequence[str]], refs: Sequence[str], test: str) -> None:
    counts = [len(x) for x in lines]
    if not refs or any(c != len(refs) for c in counts):
        raise ValueError(
            f"{test} needs as many lines of each: {', '.join(map(str, counts))} outputs, "
            f"{len(refs)} references"
        )


def paired_bootstrap(
    baseline: Sequence[str],
    system: Sequence[str],
    refs: Sequence[str],
    n_samples: int = SAMPLES,
    metric: str = "bleu",
) -> Paired:
    """Two-sided paired bootstrap over the test sentences (Koehn 2004) of tokenised BLEU (or
    ``metric``: ``chrf``, ``chrfpp``): ``baseline`` and ``system`` lines against ``refs``, the
    gain's p and 95 % interval (see the module docstring; sacreBLEU's resampling seed, 12345
    unless ``SACREBLEU_SEED`` says otherwise)."""
    _check([baseline, system], refs, "paired bootstrap")
    base, sys_ = metric_stats(baseline, refs, metric), metric_stats(system, refs, metric)
    draws = sentence_draws(resampling_rng(), len(refs), n_samples)
    resampled = corpus_scores(draws @ sys_, metric) - corpus_scores(draws @ base, metric)
    first, second = (float(exact_scores(s.sum(0), metric)) for s in (base, sys_))
    p, low, high = two_sided(resampled, second - first)
    return Paired(first, second, p, len(refs), low, high)


def _row(per_seed: np.ndarray, resampled: np.ndarray) -> SeedRow:
    """A system's :class:`SeedRow` from its per-seed BLEU and their ``(samples, seeds)`` BLEU
    over sentence resamples."""
    seed_sd = float(np.std(per_seed, ddof=1)) if len(per_seed) > 1 else float("nan")
    test_se = float(np.mean(np.std(resampled, axis=0, ddof=1)))
    return SeedRow(float(np.mean(per_seed)), seed_sd, test_se, tuple(map(float, per_seed)))


def _seed_means(rng, resampled: np.ndarray, picks: np.ndarray | None = None) -> np.ndarray:
    """Each sample's mean BLEU over seeds drawn with replacement (``resampled``: samples x
    seeds; ``picks``: the seeds drawn, where another system's draw is to be shared)."""
    if picks is None:
        picks = rng.integers(resampled.shape[1], size=resampled.shape)
    return np.take_along_axis(resampled, picks, axis=1).mean(axis=1)


def seed_variance(per_seed: np.ndarray, resampled: np.ndarray) -> tuple[float, float]:
    """The seeds' share of the variance of a mean over ``k`` seeds, and its df:
    ``sigma_u^2 / k`` of a model with a seed effect ``u``, a sentence effect and their
    interaction, by the method of moments (0 with one seed, or where the estimate is negative).

    The seeds' spread on the one test set, ``S = sd(per_seed)^2``, holds the seed effect and the
    interaction's ``sigma_w^2 / N``; the sentence draws (``resampled``: draws x seeds) measure
    the interaction as the excess of a seed's variance (``V_k``, averaged) over the mean's
    (``V``): ``V_k - V = (1 - 1/k) sigma_w^2 / N``. So ``sigma_u^2 = S - k (V_k - V) / (k-1)``;
    the sentence draws of the mean already hold the rest. The estimate varies as ``S`` does
    (``2 S^2 / (k-1)``), so its df is Satterthwaite's ``(k-1) (sigma_u^2 / S)^2`` (at least 1):
    ``k - 1`` where the seed effect is all of the spread, fewer where the interaction is much
    of it."""
    k = len(per_seed)
    if k < 2:
        return 0.0, 0.0
    spread = float(np.var(per_seed, ddof=1))
    of_mean = float(np.var(resampled.mean(axis=1), ddof=1))
    of_each = float(np.mean(np.var(resampled, axis=0, ddof=1)))
    interaction = max(k * (of_each - of_mean) / (k - 1), 0.0)  # never below 0: rounding
    effect = max(spread - interaction, 0.0)
    if effect == 0:
        return 0.0, 0.0
    return effect / k, max((k - 1) * (effect / spread) ** 2, 1.0)


def seed_term(parts: Sequence[tuple[float, float]]) -> tuple[float, float]:
    """The seeds' standard error of a gain, and its degrees of freedom, from each side's
    :func:`seed_variance` (Welch-Satterthwaite's df); ``(0, inf)`` where it is 0."""
    parts = [(v, df) for v, df in parts if df > 0 and v > 0]
    var = float(sum(v for v, _ in parts))
    if var == 0:
        return 0.0, float("inf")
    return float(np.sqrt(var)), var**2 / sum(v**2 / df for v, df in parts)


def two_level_bootstrap(
    baseline: Sequence[Sequence[str]],
    system: Sequence[Sequence[str]],
    refs: Sequence[str],
    n_samples: int = SAMPLES,
    metric: str = "bleu",
    paired_seeds: bool = False,
    seeds: str = "t",
) -> SeedPaired:
    """Two-sided test over seeds and sentences of the gain in mean tokenised BLEU (or
    ``metric``: ``chrf``, ``chrfpp``).

    ``baseline`` and ``system`` are each a list of outputs, one per seed, all on the sentences of
    ``refs``. The gain is the mean over seeds of the per-seed corpus BLEU, system minus
    baseline. Each of ``n_samples`` draws takes one set of sentence indices that every seed's
    outputs share and scores the mean over all seeds of each side (the test set's part, which
    holds the seed-by-sentence interaction too), plus the seeds' part: ``seeds="t"``, a draw of
    Student's t with :func:`seed_term`'s df times its standard error, the seed effect's share
    estimated by :func:`seed_variance` (a mixed model's components by the method of moments,
    with a t-based seed term: at five seeds, resampling the seeds gives a spread too narrow by
    ``(k-1)/k`` in variance and by its normal tails where seeds dominate, and counts the
    interaction twice where sentences do: ``scripts/studies/coverage.py``);
    ``seeds="resample"``, each side's seeds drawn with replacement and averaged (the earlier
    test, kept for that comparison). p and the 95 %
    interval are as in :func:`paired_bootstrap`, which this test is with one seed each.
    ``paired_seeds``: seed ``i`` of each side shares its seed (the same models decoded twice, as
    unknown-word replacement is, or rows trained with the same seed ids): the seed term is that
    of the per-seed differences. The rows report mean, seed sd and test-set standard error
    (Clark et al. 2011)."""
    if not len(baseline) or not len(system):
        raise ValueError("a test over seeds needs at least one output of each system")
    _check([*baseline, *system], refs, "two-level bootstrap")
    stats = [np.stack([metric_stats(h, refs, metric) for h in row]) for row in (baseline, system)]
    return two_level_of_stats(stats[0], stats[1], n_samples, metric, paired_seeds, seeds)


def _drawn(weights: np.ndarray, stats: np.ndarray) -> np.ndarray:
    """Every draw's summed statistics of every seed, ``(samples, seeds, columns)``, from the
    draws' multiplicities as floats (``weights``: a float product, exact for counts below
    2^53, for the BLAS's speed)."""
    return np.stack([weights @ s.astype(float) for s in stats], axis=1)


def two_level_of_stats(
    baseline: np.ndarray,
    system: np.ndarray,
    n_samples: int = SAMPLES,
    metric: str = "bleu",
    paired_seeds: bool = False,
    seeds: str = "t",
) -> SeedPaired:
    """:func:`two_level_bootstrap` of sentence statistics (each side ``(seeds, sentences,
    columns)``, as :func:`~luong_lit.metrics.significance_stats.metric_stats` gives a seed's)."""
    if paired_seeds and len(baseline) != len(system):
        raise ValueError("paired seeds need as many outputs of each system")
    if not len(baseline) or not len(system):
        raise ValueError("a test over seeds needs at least one output of each system")
    if seeds not in ("t", "resample"):
        raise ValueError(f"seeds={seeds!r}: 't' or 'resample'")
    stats = [baseline, system]
    rng = resampling_rng()
    draws = sentence_draws(rng, baseline.shape[1], n_samples)  # first, as paired_bootstrap does
    weights = draws.astype(float)  # once for both sides
    resampled = [corpus_scores(_drawn(weights, s), metric) for s in stats]
    per_seed = [exact_scores(s.sum(axis=1), metric) for s in stats]
    gain = float(per_seed[1].mean() - per_seed[0].mean())
    if paired_seeds:  # the seeds' part of the per-seed differences
        parts = [seed_variance(per_seed[1] - per_seed[0], resampled[1] - resampled[0])]
    else:
        parts = [seed_variance(x, r) for x, r in zip(per_seed, resampled, strict=True)]
    se, df = seed_term(parts)
    if seeds == "resample":
        picks = rng.integers(len(baseline), size=resampled[0].shape) if paired_seeds else None
        diffs = _seed_means(rng, resampled[1], picks) - _seed_means(rng, resampled[0], picks)
    else:
        diffs = resampled[1].mean(axis=1) - resampled[0].mean(axis=1)
        if se > 0:
            diffs = diffs + se * rng.standard_t(df, size=n_samples)
    p, low, high = two_sided(diffs, gain)
    rows = [_row(b, r) for b, r in zip(per_seed, resampled, strict=True)]
    return SeedPaired(rows[0], rows[1], gain, low, high, p, baseline.shape[1], n_samples, se, df)


def seed_row(outputs: Sequence[Sequence[str]], refs: Sequence[str], n_samples: int = SAMPLES,
             metric: str = "bleu") -> SeedRow:  # fmt: skip
    """One system's mean BLEU over its seeds' ``outputs``, the seeds' standard deviation and the
    test-set standard error (the sd of each seed's BLEU over sentence resamples, averaged: the
    ``s_sel`` of Clark et al. 2011)."""
    _check(list(outputs), refs, "seed row")
    stats = np.stack([metric_stats(h, refs, metric) for h in outputs])
    draws = sentence_draws(resampling_rng(), len(refs), n_samples)
    resampled = corpus_scores(_drawn(draws.astype(float), stats), metric)
    return _row(exact_scores(stats.sum(axis=1), metric), resampled)
