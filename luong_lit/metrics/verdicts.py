"""A family of tests corrected together, and each test's verdict in words.

The family is corrected by Holm's step-down method (Holm 1979, :func:`holm`). A step "holds"
when the system is better with corrected ``p < alpha``, is "reversed" when it is worse with
``p < alpha``, and is "not shown" otherwise (:func:`judge`): a test that finds nothing shows no
difference, not that there is none. The tests are :mod:`luong_lit.metrics.significance`'s.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from luong_lit.metrics.significance import Paired, SeedPaired

ALPHA = 0.05


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
