"""Each step of a ladder judged by a test over seeds and sentences: the two-level bootstrap of
:mod:`luong_lit.metrics.significance` on the test-set outputs of the two rows' runs (every
seed of each row: the gain and the test over the same seeds), two-sided, with the gain's 95 %
interval; the steps of one table corrected together by Holm's method (:func:`judged`).

A run's outputs are the lines its own ``evaluate`` report read (``eval_TEST.hyp``, and
``eval_TEST.hyp_unk`` after unknown-word replacement, beside ``eval_TEST.ref``; read by
:mod:`luong_lit.analysis.outputs`). An ensemble's are those of its own report. "+ unk replace"
compares each run with itself decoded again (the seeds paired). Where either side has no
outputs, the step has no test.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from luong_lit.analysis.outputs import run_outputs
from luong_lit.analysis.records import RunRow
from luong_lit.metrics.significance import SeedPaired, SeedRow, seed_row
from luong_lit.metrics.significance import two_level_bootstrap as two_level
from luong_lit.metrics.verdicts import holm, judge, verdicts
from luong_lit.study.rows import LadderRow


def _by_seed(members: list[RunRow], kind: str) -> dict:
    found = {}
    for m in members:
        out = run_outputs(Path(m.path), kind) if m.path else None
        if out is not None:
            found[m.seed] = out
    return found


def _sides(above: LadderRow, row: LadderRow) -> tuple[list, list, list[str], bool] | None:
    """``(baseline outputs, system outputs, refs, seeds paired)`` of the step to ``row``."""
    if row.unk_of:  # the same runs decoded again with unk replacement
        plain, replaced = _by_seed(row.unk_of, "hyp"), _by_seed(row.unk_of, "hyp_unk")
        seeds = [s for s in plain if s in replaced]
        if not seeds:
            return None
        return (
            [plain[s][0] for s in seeds],
            [replaced[s][0] for s in seeds],
            plain[seeds[0]][1],
            True,
        )
    if row.ensemble_outputs:  # one system, beside every seed of the row above
        hyp, ref = row.ensemble_outputs
        above_runs = above.unk_of or above.members
        base = [h for h, r in _by_seed(above_runs, "hyp_unk").values() if r == ref]
        return (base, [hyp], ref, False) if base else None
    a, b = _by_seed(above.members, "hyp"), _by_seed(row.members, "hyp")
    refs = {tuple(r) for _, r in [*a.values(), *b.values()]}
    if not a or not b or len(refs) != 1:  # no outputs, or not of one test set
        return None
    return [h for h, _ in a.values()], [h for h, _ in b.values()], list(refs.pop()), False


#: draws of each step's test: enough that p's Monte Carlo error (printed) is about 0.002 at
#: p = 0.05, and an interval's ends move by a few hundredths with the resampling seed
SAMPLES = 10_000


def _seed_paired(above: LadderRow, row: LadderRow) -> tuple[list, list, list[str]] | None:
    """Both rows' outputs in the order of the seeds they share, where they share every one
    (at least two) and decode one test set."""
    a, b = _by_seed(above.members, "hyp"), _by_seed(row.members, "hyp")
    refs = {tuple(r) for _, r in [*a.values(), *b.values()]}
    if len(a) < 2 or set(a) != set(b) or len(refs) != 1:
        return None
    seeds = sorted(a)
    return [a[s][0] for s in seeds], [b[s][0] for s in seeds], list(refs.pop())


def step_test(
    above: LadderRow | None, row: LadderRow, pair_seeds: bool = False, samples: int = SAMPLES
) -> SeedPaired | None:
    """The two-level bootstrap of the step from ``above`` to ``row``; None where the outputs to
    test are missing, or where both sides are the same lines (nothing to test: "+ unk" on
    outputs with no ``<unk>``). ``pair_seeds``: where both rows have runs of the same seeds,
    seed ``i`` of one is paired with seed ``i`` of the other (:func:`two_level`'s
    ``paired_seeds``)."""
    sides = _sides(above, row) if above else None
    if sides is None:
        return None
    base, system, refs, paired = sides
    shared = _seed_paired(above, row) if pair_seeds and not paired and above else None
    if shared is not None:
        base, system, refs, paired = (*shared, True)
    if len(base) == len(system) and all(list(a) == list(b) for a, b in zip(base, system)):
        return None
    return two_level(base, system, refs, n_samples=samples, paired_seeds=paired)


def row_spread(row: LadderRow) -> SeedRow | None:
    """A model row's mean, seed sd and test-set standard error from its runs' outputs."""
    found = _by_seed(row.members, "hyp")
    refs = {tuple(r) for _, r in found.values()}
    if not found or len(refs) != 1:
        return None
    return seed_row([h for h, _ in found.values()], list(refs.pop()))


def judged(
    laid: Sequence[LadderRow], pair_seeds: bool = False
) -> list[tuple[SeedPaired, float, str] | None]:
    """Each row's step from the row above: its test, its Holm-corrected p over the table's
    tested steps, and its verdict (None: no test)."""
    tests = [step_test(laid[i - 1], row, pair_seeds) if i else None for i, row in enumerate(laid)]
    found = iter(verdicts([t for t in tests if t is not None]))
    return [None if t is None else (t, *next(found)) for t in tests]


def _p(p: float) -> str:
    return f"{p:.4f}" if p < 0.001 else f"{p:.3f}"


def sensitivity(families: Sequence[tuple[str, Sequence[LadderRow], Sequence]]) -> str:
    """One line: which verdicts change where Holm's family is every tested step of the
    document rather than each table's. ``families``: each table's name, rows and
    :func:`judged` tests; nothing where fewer than two tables have a tested step."""
    found = [
        (f"{name}, {row.paper_row}", *test)
        for name, laid, tests in families
        for row, test in zip(laid, tests, strict=True)
        if test is not None
    ]
    if len({name for name, _, tests in families if any(tests)}) < 2:
        return ""
    wide = holm([t.p for _, t, _, _ in found])
    changed = [
        f"{where} {t.gain:+.2f} ({said} -> {judge(t.gain, p)}, p {_p(p)})"
        for (where, t, _, said), p in zip(found, wide, strict=True)
        if judge(t.gain, p) != said
    ]
    head = f"Holm over all {len(found)} tested steps of this document instead of each table's: "
    return head + ("no verdict changes." if not changed else "; ".join(changed) + ".")


def verdict_cells(found: tuple[SeedPaired, float, str] | None) -> tuple[str, str, str]:
    """The table's gain (with its 95 % interval and the seeds on each side), corrected ``p``
    and ``verdict`` cells. Where a side has one seed (or is one ensemble), the test resamples
    the test sentences alone, so the verdict holds for these trained models only: it says so."""
    if found is None:
        return "–", "–", "–"
    test, p, said = found
    sides = (len(test.baseline.per_seed), len(test.system.per_seed))
    gain = f"{test.gain:+.2f} [{test.low:+.2f}, {test.high:+.2f}] ({sides[0]}/{sides[1]} seeds)"
    if min(sides) < 2 and said != "not shown":
        said += ", these models only (a side with one seed: its seed variance not tested)"
    raw = f"raw {_p(test.p)} ± {test.p_error:.4f}" if test.p_error else f"raw {_p(test.p)}"
    return gain, f"{_p(p)} ({raw})", said
