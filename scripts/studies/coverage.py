"""How often the test over seeds and sentences covers a known gain, and how often it finds one
where there is none: synthetic test sets whose answer is known, scored with the kit's own test
(:func:`luong_lit.metrics.significance.two_level_of_stats`).

    python -m scripts.studies.coverage [--replicates 1000] [--seeds 5] [--samples 1000]

Each replicate draws a test set of ``--sentences`` sentences and, for each of two systems,
``--seeds`` trained models: a sentence's BLEU statistics come from a per-word match rate
``sigmoid(mu_system + seed effect + sentence difficulty + noise)`` (an n-gram matches with the
rate to the n-th power), the seed effect drawn once per model. Two settings: *null* (both
systems' ``mu`` equal: the true gain is 0 by symmetry, so a rejection is a type-I error) and
*gain* (``mu`` apart: the true gain is the estimator's mean over ``--truth`` replicates, its own
Monte Carlo error printed). Each setting once with the seed effect dominant and once with the
sentences' noise dominant; each test run with the t-based seed term (``seeds="t"``, the kit's)
and with the seed-level resampling it replaced (``seeds="resample"``). Prints one line per
setting: the share of 95 % intervals that hold the true gain and the share of p < 0.05, with
their binomial standard errors.
"""

from __future__ import annotations

import argparse
import os

import numpy as np

os.environ.setdefault("SACREBLEU_SEED", "12345")

from luong_lit.metrics.significance import two_level_of_stats  # noqa: E402
from luong_lit.metrics.significance_stats import corpus_bleus  # noqa: E402

#: (name, seed effect sd, per-sentence noise sd) on the logit of the match rate
SPREADS = (("seed-dominant", 0.08, 0.3), ("sentence-dominant", 0.01, 1.2))


def system_stats(rng, lengths, difficulty, mu, seed_sd, noise_sd, seeds) -> np.ndarray:
    """``(seeds, sentences, 10)`` BLEU statistics of one system's ``seeds`` models."""
    n = len(lengths)
    effect = rng.normal(0, seed_sd, size=(seeds, 1))
    rate = 1 / (1 + np.exp(-(mu + effect + difficulty + rng.normal(0, noise_sd, (seeds, n)))))
    totals = np.stack([np.maximum(lengths - k, 0) for k in range(4)], axis=-1)  # (n, 4)
    chance = rate[..., None] ** np.arange(1, 5)  # an n-gram matches: every word of it does
    matched = rng.binomial(np.broadcast_to(totals, (seeds, n, 4)), chance)
    length = np.broadcast_to(lengths, (seeds, n))[..., None]
    return np.concatenate([length, length, matched, np.broadcast_to(totals, matched.shape)], -1)


def replicate(rng, args, mu_gain: float, seed_sd: float, noise_sd: float):
    """One test set and two systems' models on it: each side's statistics."""
    lengths = rng.integers(6, 21, size=args.sentences)
    difficulty = rng.normal(0, 0.5, size=args.sentences)
    return [
        system_stats(rng, lengths, difficulty, mu, seed_sd, noise_sd, args.seeds)
        for mu in (0.0, mu_gain)
    ]


def gain_of(stats) -> float:
    """The estimator: mean over seeds of each side's corpus BLEU, system minus baseline."""
    base, system = (corpus_bleus(s.sum(axis=1)).mean() for s in stats)
    return float(system - base)


def setting(args, name: str, seed_sd: float, noise_sd: float, mu_gain: float, rng) -> None:
    truth, truth_se = 0.0, 0.0
    if mu_gain:
        runs = (replicate(rng, args, mu_gain, seed_sd, noise_sd) for _ in range(args.truth))
        gains = [gain_of(stats) for stats in runs]
        truth, truth_se = float(np.mean(gains)), float(np.std(gains) / np.sqrt(len(gains)))
    found = {"t": [], "resample": []}
    spread = []
    for _ in range(args.replicates):
        stats = replicate(rng, args, mu_gain, seed_sd, noise_sd)
        tests = {
            how: two_level_of_stats(*stats, n_samples=args.samples, seeds=how) for how in found
        }
        for how, test in tests.items():
            found[how].append((test.low <= truth <= test.high, test.p < 0.05))
        spread.append((tests["t"].baseline.seed_sd, tests["t"].baseline.test_se))
    seed_sd_bleu, test_se_bleu = np.nanmean(np.array(spread), axis=0)
    kind = "null" if not mu_gain else f"gain {truth:+.2f} (MC error {truth_se:.2f})"
    head = (f"{name}, {kind}: {args.seeds} seeds a side, {args.sentences} sentences, BLEU seed sd "
            f"{seed_sd_bleu:.2f}, test SE {test_se_bleu:.2f}")  # fmt: skip
    print(head)
    for how, rows in found.items():
        covered, rejected = np.mean(rows, axis=0)
        se = [np.sqrt(x * (1 - x) / len(rows)) for x in (covered, rejected)]
        print(f"  seeds={how:8s} 95 % interval covers {covered:.3f} ± {se[0]:.3f}; "
              f"p < 0.05 in {rejected:.3f} ± {se[1]:.3f}")  # fmt: skip


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--replicates", type=int, default=1000)
    ap.add_argument("--truth", type=int, default=4000, help="replicates for the true gain")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--sentences", type=int, default=1000)
    ap.add_argument("--samples", type=int, default=1000, help="bootstrap draws a test")
    ap.add_argument("--gain", type=float, default=0.05, help="mu apart in the gain setting")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    for name, seed_sd, noise_sd in SPREADS:
        for mu_gain in (0.0, args.gain):
            setting(args, name, seed_sd, noise_sd, mu_gain, rng)


if __name__ == "__main__":
    main()
