"""Alignment error rate against gold sure/possible links (paper §5.4, Table 6).

See docs/paper_notes.md §12.

``AER = 1 − (|A∩S| + |A∩P|) / (|A| + |S|)`` summed over the corpus, with ``S ⊆ P``.
Links are 0-based ``(source, target)`` pairs here; the RWTH gold file (talp format) is
1-based ``i-j`` with ``i`` in ``deen.src`` (German) and ``j`` in ``deen.tgt`` (English),
and ``ipj`` for a possible link.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from luong_lit.data.io import DataError, read_lines
from luong_lit.metrics.buckets import length_groups

Links = set[tuple[int, int]]


def read_talp(path: str | Path, flip: bool = False) -> list[tuple[Links, Links]]:
    """``(sure, possible)`` 0-based link sets per line; ``possible`` includes ``sure``.

    ``flip`` swaps the sides, e.g. for an En→De model scored on the De–En RWTH gold.
    """
    out = []
    for lineno, line in enumerate(read_lines(path, allow_empty_file=False), start=1):
        sure, possible = set(), set()
        for item in line.split():
            sep = "p" if "p" in item else "-"
            i, _, j = item.partition(sep)
            if not (i.isdigit() and j.isdigit()) or int(i) < 1 or int(j) < 1:
                raise DataError(f"{path}:{lineno}: {item!r} is not a 1-based 'i-j' or 'ipj' link")
            link = (int(j) - 1, int(i) - 1) if flip else (int(i) - 1, int(j) - 1)
            possible.add(link)
            if sep == "-":
                sure.add(link)
        out.append((sure, possible))
    return out


def aer(hyps: Sequence[Iterable[tuple[int, int]]], gold: Sequence[tuple[Links, Links]]) -> float:
    """Corpus AER of hypothesised links ``hyps`` against ``(sure, possible)`` gold."""
    if len(hyps) != len(gold):
        raise ValueError(f"{len(hyps)} aligned sentences but {len(gold)} gold ones")
    a_s = a_p = n_a = n_s = 0
    for links, (sure, possible) in zip(hyps, gold):
        links = set(links)
        a_s += len(links & sure)
        a_p += len(links & possible)
        n_a += len(links)
        n_s += len(sure)
    return 1.0 - (a_s + a_p) / max(n_a + n_s, 1)


def pharaoh(links: Iterable[tuple[int, int]]) -> str:
    """``i-j`` pairs, sorted by target then source position."""
    return " ".join(f"{i}-{j}" for i, j in sorted(links, key=lambda x: (x[1], x[0])))


def diagonal_links(src_len: int, tgt_len: int) -> Links:
    """The trivial baseline: target word ``j`` aligned to source word ``round(j·S/T)``."""
    if not src_len or not tgt_len:
        return set()
    return {
        (min(src_len - 1, int(j * src_len / tgt_len + 0.5 * src_len / tgt_len)), j)
        for j in range(tgt_len)
    }


def position_links(src_len: int, tgt_len: int) -> Links:
    """A diagonal blind to the sentence lengths: target word ``j`` aligned to source word
    ``min(j, S-1)``, all that attention can do from the target position alone."""
    return {(min(j, src_len - 1), j) for j in range(tgt_len)} if src_len else set()


def link_offsets(
    hyps: Sequence[Iterable[tuple[int, int]]], gold: Sequence[tuple[Links, Links]], clip: int = 5
) -> dict[str, float]:
    """Share of links at each signed distance, in source words and clipped to ``±clip``, from
    the nearest gold link (sure or possible) of the same target word; links of target words
    without a gold link are left out. Positive: the model points later in the source."""
    counts = dict.fromkeys(range(-clip, clip + 1), 0)
    for links, (_, possible) in zip(hyps, gold):
        by_target: dict[int, list[int]] = {}
        for i, j in possible:
            by_target.setdefault(j, []).append(i)
        for i, j in links:
            if j in by_target:
                d = min((g - i for g in by_target[j]), key=lambda x: (abs(x), x))  # gold - model
                counts[max(-clip, min(clip, -d))] += 1
    total = max(sum(counts.values()), 1)
    return {f"{k:+d}": v / total for k, v in counts.items()}


LENGTH_EDGES = (11, 21, 31)  # source lengths 1-10, 11-20, 21-30, 31+


def aer_by_length(
    hyps: Sequence[Iterable[tuple[int, int]]],
    gold: Sequence[tuple[Links, Links]],
    src_lens: Sequence[int],
    edges: Sequence[int] = LENGTH_EDGES,
) -> list[dict]:
    """Corpus AER within each source-length group: ``{bucket, n, aer}`` for non-empty groups.

    A model that aligns short sentences and loses its way in long ones shows here."""
    if not len(hyps) == len(gold) == len(src_lens):
        raise ValueError(
            f"{len(hyps)} aligned sentences, {len(gold)} gold, {len(src_lens)} lengths"
        )
    rows = []
    for label, _, idx in length_groups(src_lens, edges, first=1):
        sub_hyps, sub_gold = [hyps[i] for i in idx], [gold[i] for i in idx]
        rows.append({"bucket": label, "n": len(idx), "aer": aer(sub_hyps, sub_gold)})
    return rows


def tail_share(
    links: Sequence[Iterable[tuple[int, int]]], src_lens: Sequence[int], k: int = 3
) -> float:
    """Share of links that point at the last ``k`` source words, over sentences of more than
    ``2k`` source words: attention that has collapsed onto the sentence end scores high here
    (gold alignments of such sentences put roughly ``k / length`` of their links there)."""
    hits = total = 0
    for sent, n in zip(links, src_lens):
        if n > 2 * k:
            sent = list(sent)
            hits += sum(i >= n - k for i, _ in sent)
            total += len(sent)
    return hits / max(total, 1)
