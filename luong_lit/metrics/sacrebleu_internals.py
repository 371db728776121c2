"""Every use the kit makes of sacreBLEU's non-public API, each in a small function that says why
it is needed and which public API is missing; the rest of the kit calls these functions.

* :func:`chrf_sentence_stats`: chrF's sufficient statistics of each line, which the paired
  tests resample (sacreBLEU's own paired test computes them the same way, privately);
* :func:`chrf_from_stats`: chrF from summed statistics.

BLEU's statistics need none of this: a ``BLEUScore`` of one sentence carries them publicly
(``counts``, ``totals``, ``sys_len``, ``ref_len``), and ``BLEU.compute_bleu`` is public.
"""

from __future__ import annotations

from collections.abc import Sequence


def chrf_sentence_stats(metric, hyps: Sequence[str], refs: Sequence[str]) -> list[list[int]]:
    """Each line's chrF statistics (``metric``: a sacreBLEU ``CHRF``): its non-public
    ``_extract_corpus_statistics``, what its ``corpus_score`` sums; a ``CHRFScore`` of one
    sentence keeps only the score."""
    return metric._extract_corpus_statistics(list(hyps), [list(refs)])


def chrf_from_stats(metric, summed: Sequence[int]) -> float:
    """chrF of summed statistics: ``metric``'s non-public ``_compute_score_from_stats``, what its
    ``corpus_score`` computes from them, with no public way in."""
    return float(metric._compute_score_from_stats([int(v) for v in summed]).score)
