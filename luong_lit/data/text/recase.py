"""Casing restored to a lowercased model's output.

Each output word takes its most frequent form in the cased target side of the training text,
counting only words that do not start a sentence (where every word is capitalised); the first
word of the output is capitalised; a word copied from the source by unknown-word replacement
keeps the source's casing when the training text has not seen it, unless it starts the source
sentence (where "In" or "An" are capitalised only by position). For German, where nouns are
capitalised, the most frequent form is nearly always right. The effect of each part on cased
BLEU is measured in docs/results_log.md ("Translating natural text").

Plain Python: sacremoses' truecaser answers a different question (the casing of *input* text
before training); the frequency table here is a few kilobytes and lives in the checkpoint.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence


class Recaser:
    """``forms`` maps a lowercased word to its usual cased form (only where the two differ)."""

    def __init__(self, forms: Mapping[str, str]) -> None:
        self.forms = dict(forms)

    @classmethod
    def learn(cls, sentences: Iterable[Sequence[str]]) -> Recaser:
        """From tokenised, cased sentences."""
        counts: dict[str, Counter] = {}
        for words in sentences:
            for word in words[1:]:
                counts.setdefault(word.lower(), Counter())[word] += 1
        forms = {}
        for low, seen in counts.items():
            best = max(seen.items(), key=lambda kv: (kv[1], kv[0] == low))[0]
            if best != low:
                forms[low] = best
        return cls(forms)

    def __call__(self, words: Sequence[str], source: Sequence[str] = ()) -> list[str]:
        """``words`` with their casing restored; ``source`` gives copied words their form."""
        from_source = {w.lower(): w for w in _after_first_word(source) if w != w.lower()}
        out = []
        for word in words:
            if word in self.forms:
                out.append(self.forms[word])
            elif word in from_source:
                out.append(from_source[word])
            else:
                out.append(word)
        for i, word in enumerate(out):  # the first word with a letter starts the sentence
            if any(c.isalpha() for c in word):
                out[i] = word[0].upper() + word[1:] if word[0].isalpha() else word
                break
        return out


def _after_first_word(words: Sequence[str]) -> Sequence[str]:
    """``words`` after the first one with a letter (capitalised by its position alone)."""
    for i, word in enumerate(words):
        if any(c.isalpha() for c in word):
            return words[i + 1 :]
    return ()
