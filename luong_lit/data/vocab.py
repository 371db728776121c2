"""Word (or subword piece) vocabularies with the four special symbols."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

PAD, UNK, BOS, EOS = "<pad>", "<unk>", "<s>", "</s>"
SPECIALS = (PAD, UNK, BOS, EOS)
PAD_ID, UNK_ID, BOS_ID, EOS_ID = 0, 1, 2, 3


class Vocab:
    """A fixed list of symbols; ids 0–3 are ``<pad> <unk> <s> </s>``."""

    def __init__(self, symbols: Sequence[str]) -> None:
        if tuple(symbols[:4]) != SPECIALS:
            raise ValueError(f"a vocabulary must start with {SPECIALS}, got {tuple(symbols[:4])}")
        self.itos = list(symbols)
        self.stoi = {s: i for i, s in enumerate(self.itos)}
        if len(self.stoi) != len(self.itos):
            raise ValueError("a vocabulary must not repeat a symbol")

    @classmethod
    def build(
        cls, sentences: Iterable[Sequence[str]], max_size: int | None = None, min_freq: int = 1
    ) -> Vocab:
        """Keep the ``max_size`` most frequent words (paper: 50K) with count ≥ ``min_freq``.

        Ties are broken alphabetically so the result does not depend on corpus order.
        """
        counts: Counter[str] = Counter()
        for sent in sentences:
            counts.update(sent)
        return cls.from_counts(counts, max_size, min_freq)

    @classmethod
    def from_counts(cls, counts: Counter, max_size: int | None = None, min_freq: int = 1) -> Vocab:
        """:meth:`build` from word counts already made (e.g. summed over chunks of a corpus)."""
        counts = Counter(counts)
        for s in SPECIALS:
            counts.pop(s, None)
        words = sorted(
            (w for w, c in counts.items() if c >= min_freq), key=lambda w: (-counts[w], w)
        )
        if max_size is not None:
            words = words[:max_size]
        return cls(list(SPECIALS) + words)

    def __len__(self) -> int:
        return len(self.itos)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Vocab) and self.itos == other.itos

    def encode(self, tokens: Sequence[str]) -> list[int]:
        get = self.stoi.get
        return [get(t, UNK_ID) for t in tokens]

    def decode(self, ids: Iterable[int], strip: bool = True) -> list[str]:
        """Symbols for ``ids``; with ``strip``, stop at ``</s>`` and drop ``<s>``/``<pad>``."""
        out = []
        for i in ids:
            i = int(i)
            if strip and i == EOS_ID:
                break
            if strip and i in (PAD_ID, BOS_ID):
                continue
            out.append(self.itos[i])
        return out
