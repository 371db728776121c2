"""Whether one system's BLEU differs from another's beyond chance: paired bootstrap resampling
(Koehn 2004), as sacreBLEU computes it (``sacrebleu.significance``, the Moses script's test).

Both systems translate the same test sentences; the test draws the sentences with replacement
``n_samples`` times and asks how often the difference of the two corpus BLEUs strays from its
resampled mean by more than the observed difference (two-sided). BLEU is the tokenised BLEU of
the paper's tables (:func:`~luong_lit.metrics.bleu.corpus_bleu_tok`: ``##AT##`` rejoined,
sacreBLEU with ``tokenize='none'``). Several seeds of each system are pooled: seed by seed, the
two systems' outputs are paired sentence by sentence and the pairs of every seed form one test
set (:func:`pooled`), so the test sees the systems' spread over seeds as well as over sentences.

A step "holds" when the system is better with ``p < alpha``, is "reversed" when it is worse with
``p < alpha``, and has "no measurable effect" otherwise (:func:`verdict`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from luong_lit.metrics.bleu import rejoin_hyphens

ALPHA = 0.05
SAMPLES = 1000


class Paired(NamedTuple):
    """The BLEU of a baseline and a system on the same sentences, their difference and its
    two-sided p-value."""

    baseline: float
    system: float
    p: float
    sentences: int

    @property
    def gain(self) -> float:
        return self.system - self.baseline


def paired_bootstrap(
    baseline: Sequence[str], system: Sequence[str], refs: Sequence[str], n_samples: int = SAMPLES
) -> Paired:
    """Paired bootstrap of tokenised BLEU: ``baseline`` and ``system`` lines against ``refs``
    (sacreBLEU's resampling seed, 12345 unless ``SACREBLEU_SEED`` says otherwise)."""
    from sacrebleu.metrics import BLEU
    from sacrebleu.significance import PairedTest

    if not len(baseline) == len(system) == len(refs) or not refs:
        raise ValueError(
            f"paired bootstrap needs as many lines of each: {len(baseline)} baseline, "
            f"{len(system)} system, {len(refs)} references"
        )
    bl, sys_, ref = ([rejoin_hyphens(x) for x in lines] for lines in (baseline, system, refs))
    test = PairedTest([("baseline", bl), ("system", sys_)], {"BLEU": BLEU(tokenize="none",
                      force=True)}, [ref], test_type="bs", n_samples=n_samples)  # fmt: skip
    _, scores = test()
    first, second = scores["BLEU"]
    p = 1.0 if first.score == second.score else float(second.p_value)  # nothing to test
    return Paired(float(first.score), float(second.score), p, len(ref))


def pooled(pairs: Sequence[tuple[Sequence[str], Sequence[str], Sequence[str]]]):
    """``(baseline, system, refs)`` of several seeds joined into one paired test set."""
    baseline, system, refs = [], [], []
    for a, b, r in pairs:
        baseline += list(a)
        system += list(b)
        refs += list(r)
    return baseline, system, refs


def verdict(found: Paired, alpha: float = ALPHA) -> str:
    """``holds``, ``reversed`` or ``no measurable effect`` (see the module docstring)."""
    if found.p >= alpha or found.gain == 0:
        return "no measurable effect"
    return "holds" if found.gain > 0 else "reversed"
