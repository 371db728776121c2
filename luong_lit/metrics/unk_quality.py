"""How good unknown-word replacement is, on its own (paper §4.2, Table 5).

BLEU barely moves when a few hundred ``<unk>`` are replaced, so it cannot say whether the
attention points at the right source word. This counts, for each ``<unk>`` of the output:

* **precision**: the replacement word occurs in the reference (each reference word used once,
  and not already matched by a word the model produced itself);
* **oracle**: the share of ``<unk>`` that *any* replacement from the sentence's source words
  could get right: source words in the reference, not already in the output, at most one per
  reference occurrence. Precision can reach the oracle, not beyond.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from luong_lit.data.vocab import UNK


def _open_reference(output: Sequence[str], reference: Sequence[str]) -> Counter:
    """Reference words not matched by the output's own (non-``<unk>``) words."""
    available = Counter(reference)
    for word in output:
        if word != UNK and available[word] > 0:
            available[word] -= 1
    return available


def replacement_quality(
    plain: Sequence[Sequence[str]],
    replaced: Sequence[Sequence[str]],
    references: Sequence[Sequence[str]],
    sources: Sequence[Sequence[str]],
) -> dict:
    """``{"unk": n, "in_reference": k, "precision": k/n, "could": m, "oracle": m/n}`` over a
    corpus; ``plain`` holds the output with ``<unk>``, ``replaced`` the same after replacement
    (word for word), ``references`` and ``sources`` the tokenised sentences."""
    if not len(plain) == len(replaced) == len(references) == len(sources):
        raise ValueError("plain, replaced, references and sources differ in length")
    n = k = m = 0
    for out, rep, ref, src in zip(plain, replaced, references, sources):
        if len(out) != len(rep):
            raise ValueError(f"an output of {len(out)} words was replaced by {len(rep)} words")
        unk = [j for j, w in enumerate(out) if w == UNK]
        if not unk:
            continue
        available = _open_reference(out, ref)
        room = available.copy()
        n += len(unk)
        for j in unk:
            if available[rep[j]] > 0:
                available[rep[j]] -= 1
                k += 1
        candidates = sum(min(c, room[w]) for w, c in Counter(src).items() if room[w] > 0)
        m += min(len(unk), candidates)
    return {
        "unk": n,
        "in_reference": k,
        "precision": k / n if n else None,
        "could": m,
        "oracle": m / n if n else None,
    }
