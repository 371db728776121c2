"""Whether one system's BLEU differs from another's beyond chance, and by how much.

BLEU is the tokenised BLEU of the paper's tables (:func:`~luong_lit.metrics.bleu.corpus_bleu_tok`:
``##AT##`` rejoined, sacreBLEU with ``tokenize='none'``). ``metric="chrf"`` (or ``"chrfpp"``)
tests chrF (chrF++) of the same lines instead (:mod:`luong_lit.metrics.chrf_ter`); where this
text says BLEU, read the score tested. Both tests are paired bootstraps (Koehn 2004) over the
test sentences, and both are two-sided:

* :func:`paired_bootstrap`, one output per system: the test sentences are drawn with replacement
  ``n_samples`` times; the signed difference of the two corpus BLEUs on each draw, centred at its
  mean, stands in for its distribution under no difference. p is the share of draws whose
  centred difference is at least as large, either way, as the observed one; the 95 % interval of
  the gain is the 2.5th to 97.5th percentile of the draws. (sacreBLEU's ``bs`` test, the Moses
  script's, centres the *absolute* differences instead and counts those beyond ``|d|``: one
  tail in effect, about half the two-sided p, e.g. 0.025 where a two-sided test gives 0.05.)
* :func:`two_level_bootstrap`, several seeds per system: each draw takes seeds with replacement
  within each system and one draw of the sentences for all of them; the statistic is the mean
  over the drawn seeds of the per-seed BLEU. Its spread covers the seeds' variance as well as the
  test set's, which concatenating the seeds' outputs (:func:`pooled`) does not: pooled, another
  seed is just more sentences. Each system's mean BLEU, seed standard deviation and test-set
  standard error are reported as MultEval reports them (Clark et al. 2011).

A family of tests is corrected by Holm's step-down method (Holm 1979, :func:`holm`). A step
"holds" when the system is better with corrected ``p < alpha``, is "reversed" when it is worse
with ``p < alpha``, and is "not shown" otherwise (:func:`verdict`): a test that finds nothing
shows no difference, not that there is none.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from luong_lit.metrics.significance_stats import (
    corpus_scores,
    metric_stats,
    resampling_rng,
    sentence_draws,
    two_sided,
)

ALPHA = 0.05
SAMPLES = 1000


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
    first, second = (float(corpus_scores(s.sum(0), metric)) for s in (base, sys_))
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


def two_level_bootstrap(
    baseline: Sequence[Sequence[str]],
    system: Sequence[Sequence[str]],
    refs: Sequence[str],
    n_samples: int = SAMPLES,
    metric: str = "bleu",
    paired_seeds: bool = False,
) -> SeedPaired:
    """Two-sided bootstrap over seeds and sentences of the gain in mean tokenised BLEU (or
    ``metric``: ``chrf``, ``chrfpp``).

    ``baseline`` and ``system`` are each a list of outputs, one per seed, all on the sentences of
    ``refs``. Each resample draws the seeds of each system with replacement (independently) and
    one set of sentence indices that every seed's outputs share; its statistic is the mean over
    the drawn seeds of the per-seed corpus BLEU, system minus baseline. The gain is that mean over
    all seeds; p and its 95 % interval are as in :func:`paired_bootstrap`, which this test is
    with one seed each. ``paired_seeds``: the two systems are the same models decoded twice
    (seed ``i`` of each the same run, as unknown-word replacement is), and each draw takes the
    same seeds of both. The rows report mean, seed sd and test-set standard error (Clark et al.
    2011)."""
    if paired_seeds and len(baseline) != len(system):
        raise ValueError("paired seeds need as many outputs of each system")
    if not baseline or not system:
        raise ValueError("a test over seeds needs at least one output of each system")
    _check([*baseline, *system], refs, "two-level bootstrap")
    stats = [np.stack([metric_stats(h, refs, metric) for h in row]) for row in (baseline, system)]
    rng = resampling_rng()
    draws = sentence_draws(rng, len(refs), n_samples)  # first, as paired_bootstrap draws them
    resampled = [corpus_scores(np.einsum("bn,knc->bkc", draws, s), metric) for s in stats]
    per_seed = [corpus_scores(s.sum(axis=1), metric) for s in stats]
    if paired_seeds:
        picks = rng.integers(len(baseline), size=resampled[0].shape)
        means = [_seed_means(rng, r, picks) for r in resampled]
    else:
        means = [_seed_means(rng, r) for r in resampled]
    gain = float(per_seed[1].mean() - per_seed[0].mean())
    p, low, high = two_sided(means[1] - means[0], gain)
    rows = [_row(b, r) for b, r in zip(per_seed, resampled, strict=True)]
    return SeedPaired(rows[0], rows[1], gain, low, high, p, len(refs))


def seed_row(outputs: Sequence[Sequence[str]], refs: Sequence[str], n_samples: int = SAMPLES,
             metric: str = "bleu") -> SeedRow:  # fmt: skip
    """One system's mean BLEU over its seeds' ``outputs``, the seeds' standard deviation and the
    test-set standard error (the sd of each seed's BLEU over sentence resamples, averaged: the
    ``s_sel`` of Clark et al. 2011)."""
    _check(list(outputs), refs, "seed row")
    stats = np.stack([metric_stats(h, refs, metric) for h in outputs])
    draws = sentence_draws(resampling_rng(), len(refs), n_samples)
    resampled = corpus_scores(np.einsum("bn,knc->bkc", draws, stats), metric)
    return _row(corpus_scores(stats.sum(axis=1), metric), resampled)


def pooled(pairs: Sequence[tuple[Sequence[str], Sequence[str], Sequence[str]]]):
    """``(baseline, system, refs)`` of several seeds joined into one paired test set. Another seed
    is then just more sentences: its variance is not tested (:func:`two_level_bootstrap` is)."""
    baseline, system, refs = [], [], []
    for a, b, r in pairs:
        baseline += list(a)
        system += list(b)
        refs += list(r)
    return baseline, system, refs


def holm(ps: Sequence[float]) -> list[float]:
    """Holm's step-down correction of a family of p-values (Holm 1979), in the order given.

    Sorted ascending, the i-th smallest of m becomes ``(m - i + 1) * p``, capped at 1 and never
    below the one before it; a hypothesis is rejected at level alpha when its corrected p is below
    alpha, which keeps the chance of any false rejection in the family at most alpha."""
    order = np.argsort(np.asarray(ps, dtype=float), kind="stable")
    m, running, out = len(order), 0.0, [0.0] * len(order)
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * float(ps[i])))
        out[i] = running
    return out


def judge(gain: float, p: float, alpha: float = ALPHA) -> str:
    """``holds`` (p < alpha, gain > 0), ``reversed`` (p < alpha, gain < 0) or ``not shown``."""
    if p >= alpha or gain == 0:
        return "not shown"
    return "holds" if gain > 0 else "reversed"


def verdict(found: Paired | SeedPaired, alpha: float = ALPHA) -> str:
    """The verdict of one test on its own p (see :func:`judge`)."""
    return judge(found.gain, found.p, alpha)


def verdicts(found: Sequence[Paired | SeedPaired], alpha: float = ALPHA) -> list[tuple[float, str]]:
    """A family of tests judged together: each one's Holm-corrected p and verdict, in order."""
    corrected = holm([f.p for f in found])
    return [(p, judge(f.gain, p, alpha)) for f, p in zip(found, corrected, strict=True)]
