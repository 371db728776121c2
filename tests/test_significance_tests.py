"""The statistics of ``luong_lit.metrics.significance``: the sentence-level paired bootstrap is
two-sided (its p where a permutation test puts it, sacreBLEU's ``bs`` p about half of that), the
two-level bootstrap over seeds and sentences widens the interval by the seeds' variance and is the
paired test with one seed each, BLEU from summed sentence statistics is the tables' BLEU, and
Holm's correction and the verdicts' wording.

Outputs are synthetic: references of random words; a baseline with one wrong word per sentence;
a system that fixes it on ``k`` sentences and breaks another word on ``m`` others, each change
moving the same n-gram counts, so that the gain's z is about ``(k - m) / sqrt(k + m)``.
"""

from __future__ import annotations

import random
import statistics

import numpy as np
import pytest

from luong_lit.metrics.bleu import corpus_bleu_tok
from luong_lit.metrics.significance import Paired, paired_bootstrap, two_level_bootstrap
from luong_lit.metrics.significance_stats import (
    corpus_bleu,
    resampling_rng,
    sentence_stats,
)
from luong_lit.metrics.verdicts import holm, judge, verdict, verdicts

LENGTH = 12  # words a sentence; the fixed word (2) and the broken one (9) move the same n-grams


def _lines(words):
    return [" ".join(w) for w in words]


def synthetic(n: int, seed: int = 0):
    """``refs`` and a ``baseline`` (word 2 of each sentence wrong), as word lists."""
    rng = random.Random(seed)
    refs = [[f"w{rng.randrange(10**6)}" for _ in range(LENGTH)] for _ in range(n)]
    baseline = [[*r[:2], f"x{i}", *r[3:]] for i, r in enumerate(refs)]
    return refs, baseline


def changed(refs, baseline, up, down):
    """The baseline with word 2 fixed on the sentences ``up`` and word 9 broken on ``down``."""
    out = [list(b) for b in baseline]
    for i in up:
        out[i][2] = refs[i][2]
    for i in down:
        out[i][9] = f"y{i}"
    return out


def at_z(k: int, m: int, n: int = 700):
    """Baseline, system and reference lines with the system better on k sentences, worse on m."""
    refs, base = synthetic(n)
    order = random.Random(1).sample(range(n), k + m)
    system = changed(refs, base, order[:k], order[k:])
    return _lines(base), _lines(system), _lines(refs)


def sacrebleu_p(baseline, system, refs, test_type: str, n_samples: int) -> float:
    from sacrebleu.metrics import BLEU
    from sacrebleu.significance import PairedTest

    metric = {"BLEU": BLEU(tokenize="none", force=True)}
    test = PairedTest([("baseline", baseline), ("system", system)], metric, [refs],
                      test_type=test_type, n_samples=n_samples)  # fmt: skip
    return float(test()[1]["BLEU"][1].p_value)


@pytest.mark.parametrize(("k", "m", "z"), [(337, 288, 1.96), (333, 292, 1.64)])
def test_the_paired_bootstrap_is_two_sided_where_sacrebleus_bs_is_one_sided(k, m, z):
    """At z = 1.96 a two-sided test gives p ~ 0.05, at z = 1.64 p ~ 0.10: ours and sacreBLEU's
    approximate randomization (a permutation test, two-sided) agree within Monte Carlo error
    (4,000 draws each: sd ~ 0.005 at p = 0.05, ~ 0.007 at 0.10, plus the permutation test's
    lattice of sign flips, ~ 0.005); sacreBLEU's bs (the Moses script's) gives about half."""
    assert (k - m) / np.sqrt(k + m) == pytest.approx(z, abs=0.01)
    base, system, refs = at_z(k, m)
    ours = paired_bootstrap(base, system, refs, n_samples=4000)
    reference = sacrebleu_p(base, system, refs, "ar", 4000)
    old_bs = sacrebleu_p(base, system, refs, "bs", 1000)
    two_sided = 2 * (1 - statistics.NormalDist().cdf(z))
    assert ours.p == pytest.approx(reference, abs=0.02)
    assert ours.p == pytest.approx(two_sided, abs=0.02)
    assert 0.35 < old_bs / reference < 0.65  # one tail in effect
    assert ours.low < ours.gain < ours.high


def test_the_resampling_is_the_corpus_bleu_of_the_lines_drawn():
    """The multiplicity matrix and summed statistics give the same draws as scoring the drawn
    lines with ``corpus_bleu_tok`` (sacreBLEU's draws, seed 12345): the interval is their
    percentiles, the test-set error their sd."""
    base, system, refs = at_z(30, 10, n=60)
    found = paired_bootstrap(base, system, refs, n_samples=20)
    idx = resampling_rng().choice(len(refs), size=(20, len(refs)), replace=True)

    def bleu(lines, i):
        return corpus_bleu_tok([lines[j] for j in i], [refs[j] for j in i])

    diffs = np.array([bleu(system, i) - bleu(base, i) for i in idx])
    assert (found.low, found.high) == pytest.approx(tuple(np.percentile(diffs, [2.5, 97.5])))
    centred = np.abs(diffs - diffs.mean())
    assert found.p == ((centred >= abs(found.gain)).sum() + 1) / (20 + 1)  # never below 1/(B+1)
    row = two_level_bootstrap([base], [system], refs, n_samples=20).baseline
    assert row.test_se == pytest.approx(np.std([bleu(base, i) for i in idx], ddof=1))


def test_bleu_from_summed_sentence_statistics_is_the_tables_bleu_exactly():
    rng = random.Random(5)
    words = "a b c d e f g h".split()
    refs = [" ".join(rng.choices(words, k=rng.randint(1, 15))) for _ in range(80)]
    hyps = [" ".join(rng.choices(words, k=rng.randint(0, 15))) for _ in range(80)]
    hyps[0], refs[0] = "a ##AT##-##AT## b c", "a-b c"  # hyphens rejoined on both sides
    for h, r in ((hyps, refs), (hyps[:3], refs[:3]), (["x y"], ["a b"]), ([""], ["a"])):
        assert corpus_bleu(sentence_stats(h, r).sum(axis=0)) == corpus_bleu_tok(h, r)
    found = paired_bootstrap(hyps[::-1], hyps, refs, n_samples=50)
    assert (found.baseline, found.system) == (corpus_bleu_tok(hyps[::-1], refs),
                                              corpus_bleu_tok(hyps, refs))  # fmt: skip


def seeded_rows(n: int = 400):
    """Two systems of three seeds each with a known seed spread: seed s of the baseline fixes
    ``100 s`` sentences, of the system ``100 s + 60`` (nested: each system seed is better than
    the baseline seed of its number on 60 sentences, worse on none)."""
    refs, base = synthetic(n, seed=7)
    order = random.Random(8).sample(range(n), n)
    rows = [[_lines(changed(refs, base, order[: 100 * s + extra], [])) for s in range(3)]
            for extra in (0, 60)]  # fmt: skip
    return rows[0], rows[1], _lines(refs)


def test_seed_variance_widens_the_two_level_interval_past_the_pooled_one():
    """Paired seed by seed and pooled, the 60 better sentences of every pair look certain; over
    seeds (three a system, their BLEU ~ 4 points apart) the same gain is not shown."""
    a, b, refs = seeded_rows()
    pooled_ = paired_bootstrap(sum(a, []), sum(b, []), refs * len(a))  # the seeds' lines joined
    over_seeds = two_level_bootstrap(a, b, refs)
    assert pooled_.p < 0.001 and verdict(pooled_) == "holds" and pooled_.low > 0
    assert over_seeds.p > 0.05 and verdict(over_seeds) == "not shown"
    assert over_seeds.low < 0 < over_seeds.high
    assert over_seeds.high - over_seeds.low > 5 * (pooled_.high - pooled_.low)
    assert over_seeds.gain == pytest.approx(pooled_.gain, abs=0.1)
    for row, outputs in ((over_seeds.baseline, a), (over_seeds.system, b)):  # Clark et al. 2011
        per_seed = [corpus_bleu_tok(h, refs) for h in outputs]
        assert row.per_seed == pytest.approx(per_seed)
        assert row.bleu == pytest.approx(statistics.mean(per_seed))
        assert row.seed_sd == pytest.approx(statistics.stdev(per_seed)) and row.seed_sd > 3
        assert 0 < row.test_se < row.seed_sd


def test_with_one_seed_each_the_two_level_test_is_the_paired_test():
    base, system, refs = at_z(60, 30, n=200)
    paired = paired_bootstrap(base, system, refs, n_samples=300)
    two = two_level_bootstrap([base], [system], refs, n_samples=300)
    assert (two.gain, two.low, two.high, two.p) == (paired.gain, paired.low, paired.high, paired.p)
    assert (two.baseline.bleu, two.system.bleu) == (paired.baseline, paired.system)
    assert np.isnan(two.baseline.seed_sd) and two.sentences == paired.sentences == 200
    with pytest.raises(ValueError, match="as many lines of each"):
        two_level_bootstrap([base], [system[:-1]], refs)


def test_holm_corrects_a_family_step_down_in_the_order_given():
    """The textbook example (four hypotheses, alpha 0.05): corrected, the 0.005 and the 0.01 are
    rejected (0.02, 0.03), the 0.03 and the 0.04 are not (both 0.06)."""
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.5, 0.001, 0.9]) == pytest.approx([1.0, 0.003, 1.0])  # capped at 1
    assert holm([0.02, 0.02]) == pytest.approx([0.04, 0.04]) and holm([]) == []
    found = [Paired(30, 31, 0.01, 9), Paired(30, 29, 0.005, 9), Paired(30, 31, 0.03, 9)]
    assert verdicts(found) == [(0.02, "holds"), (0.015, "reversed"), (0.03, "holds")]
    assert [v for _, v in verdicts([*found, Paired(30, 31, 0.04, 9)])] == [
        "holds", "reversed", "not shown", "not shown"]  # fmt: skip


def test_verdicts_say_holds_reversed_or_not_shown_never_no_effect():
    assert judge(1.0, 0.049) == "holds" and judge(-1.0, 0.01) == "reversed"
    assert judge(1.0, 0.05) == judge(-1.0, 0.2) == judge(0.0, 0.0) == "not shown"
    assert verdict(Paired(30.0, 30.0, 1.0, 10)) == "not shown"


def test_the_array_bleu_is_sacrebleus_on_every_kind_of_statistics():
    """Property test: random statistics with zero matches, empty orders, short and empty
    hypotheses; the array arithmetic equals sacreBLEU's ``compute_bleu`` within rounding."""
    from luong_lit.metrics.significance_stats import corpus_bleus

    rng = np.random.default_rng(3)
    n = 5000
    totals = rng.integers(0, 30, size=(n, 4))
    matched = (totals * rng.uniform(0, 1, size=(n, 4))).astype(int) * (
        rng.uniform(size=(n, 4)) > 0.3
    )
    lengths = rng.integers(0, 40, size=(n, 2))
    stats = np.concatenate([lengths, matched, totals], axis=1)
    exact = np.array([corpus_bleu(row) for row in stats])
    assert (exact == 0).sum() > 100 and (exact > 0).sum() > 100  # both kinds drawn
    assert np.abs(corpus_bleus(stats) - exact).max() < 1e-9
    assert corpus_bleus(stats.reshape(50, 100, 10)).shape == (50, 100)


def test_the_seed_term_counts_the_seed_effect_and_not_the_sentences_twice():
    """Synthetic models without a gain (``scripts/studies/coverage.py``, which runs 1,000 test
    sets a setting): where the seeds dominate, the t-based test rejects at about 5 % and
    resampling the seeds (its predecessor) more often; where the sentences dominate (the seeds
    differ only sentence by sentence), the t-based test rejects at most about 5 % (2 % in the
    1,000-set study) and resampling the seeds, which counts that variance twice, less still."""
    from luong_lit.metrics.significance import two_level_of_stats
    from scripts.studies.coverage import replicate

    class Args:
        sentences, seeds = 400, 5

    rng = np.random.default_rng(1)
    for seed_sd, noise_sd in ((0.08, 0.3), (0.0, 1.2)):
        rejected = {"t": 0, "resample": 0}
        for _ in range(300):
            stats = replicate(rng, Args, 0.0, seed_sd, noise_sd)
            for how in rejected:
                rejected[how] += two_level_of_stats(*stats, n_samples=300, seeds=how).p < 0.05
        assert 0.01 < rejected["t"] / 300 < 0.09, (seed_sd, rejected)
        if seed_sd:
            assert rejected["resample"] > rejected["t"]
        else:
            assert rejected["resample"] < rejected["t"]
    loud = two_level_of_stats(*replicate(rng, Args, 0.0, 0.1, 0.3), n_samples=300)
    assert loud.seed_se > 0.3 and 4 <= loud.df <= 8  # Welch's df from two sides of 5 seeds
