"""Bilingual word dictionaries for unknown-word replacement (docs/paper_notes.md §9).

A dictionary maps a source word to its single best translation. It comes from

* a file of ``src tgt [prob]`` lines (plain or ``.gz``): the entry with the highest
  probability wins, or the first one listed when there is no probability column (the MUSE
  files list a word's translations most frequent first); or
* word-aligned parallel text: links are counted, pairs seen fewer than ``min_count`` times are
  dropped (the authors keep count ≥ 10), and each source word keeps the target word with the
  highest ``p(t|s)``. The links come from Pharaoh ``i-j`` lines or from eflomal
  (:mod:`luong_lit.alignment.eflomal`, ``pip install eflomal``).

``python -m luong_lit dictionary --src F --tgt F --out F`` builds one with eflomal.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

from luong_lit.data.io import DataError, read_lines


def load_dictionary(path: str | Path) -> dict[str, str]:
    """Read ``src tgt [prob]`` lines; errors name the file and line."""
    best: dict[str, tuple[float, str]] = {}
    for lineno, line in enumerate(read_lines(path), start=1):
        cols = line.split()
        if not cols:
            continue
        if len(cols) not in (2, 3):
            raise DataError(
                f"{path}:{lineno}: expected 'source target [probability]', got {line!r}"
            )
        try:
            prob = float(cols[2]) if len(cols) == 3 else -lineno  # no column: first listed wins
        except ValueError:
            raise DataError(
                f"{path}:{lineno}: the probability {cols[2]!r} is not a number"
            ) from None
        if cols[0] not in best or prob > best[cols[0]][0]:
            best[cols[0]] = (prob, cols[1])
    return {src: tgt for src, (_, tgt) in best.items()}


def parse_links(line: str, where: str = "") -> list[tuple[int, int]]:
    """Pharaoh ``i-j`` pairs (0-based source, target positions) of one sentence."""
    links = []
    for item in line.split():
        i, sep, j = item.partition("-")
        if not sep or not i.isdigit() or not j.isdigit():
            raise DataError(f"{where}: {item!r} is not an 'i-j' alignment link")
        links.append((int(i), int(j)))
    return links


def dictionary_from_links(
    src: Sequence[Sequence[str]],
    tgt: Sequence[Sequence[str]],
    links: Sequence[Iterable[tuple[int, int]]],
    min_count: int = 10,
) -> dict[str, str]:
    """Best translation per source word from counted alignment links (docs/paper_notes.md §9)."""
    pairs: Counter[tuple[str, str]] = Counter()
    for s, t, sent_links in zip(src, tgt, links):
        pairs.update((s[i], t[j]) for i, j in sent_links if i < len(s) and j < len(t))
    src_count: Counter[str] = Counter()
    for (s_word, _), n in pairs.items():
        src_count[s_word] += n
    best: dict[str, tuple[float, str]] = {}
    for (s_word, t_word), n in pairs.items():
        if n < min_count:
            continue
        p = n / src_count[s_word]  # p(t|s)
        if s_word not in best or (p, t_word) > best[s_word]:
            best[s_word] = (p, t_word)
    return {s: t for s, (_, t) in best.items()}


def write_dictionary(dictionary: dict[str, str], path: str | Path) -> None:
    Path(path).write_text(
        "".join(f"{s} {t}\n" for s, t in sorted(dictionary.items())), encoding="utf-8"
    )
