"""Unknown-word replacement (paper §4.1 and footnote 14; docs/paper_notes.md §9, §12).

Every ``<unk>`` in a translation takes the source word at the argmax of its attention vector.
That word is translated through a dictionary when it has an entry, and copied otherwise.

Which step's ``a_t`` belongs to which target word (footnote 14): at step ``t`` the decoder
reads ``y_{t-1}`` and predicts ``y_t``. Location-based scores align ``a_t`` with the predicted
word ``y_t``; content-based scores align it with the input word ``y_{t-1}``, so target word
``i`` takes the vector of step ``i + 1`` (the first step's vector is unused). ``predicted``
always uses the vector of the step that produced the word (OpenNMT-py, seq2seq-attn).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

import torch
from torch import Tensor

from luong_lit.data.vocab import BOS, PAD, UNK

CONVENTIONS = ("paper", "predicted")


def alignment_rows(
    attention: Tensor, n_words: int, content_based: bool, convention: str = "paper"
) -> Tensor:
    """The (n_words, S) rows of a per-step ``attention`` (T, S) that align each target word.

    ``attention`` holds every decoding step, the ``</s>`` step included, so
    ``T >= n_words + 1`` for a finished translation. A translation cut at the length limit
    has ``T == n_words``: no step read its last word, so under footnote 14 that word takes
    the vector of the step that produced it. ``content_based``: whether the score is dot,
    general or concat. ``convention``: ``paper`` (footnote 14) or ``predicted``.
    """
    if convention not in CONVENTIONS:
        raise ValueError(
            f"alignment convention {convention!r} is unknown; "
            f"choose one of {', '.join(CONVENTIONS)}"
        )
    if attention.size(0) < n_words:
        raise ValueError(f"{attention.size(0)} attention steps cannot align {n_words} words")
    shift = 1 if (convention == "paper" and content_based) else 0
    rows = attention[shift : shift + n_words]  # (n_words, S), or one short when cut off
    if rows.size(0) < n_words:
        rows = torch.cat([rows, attention[-1:]], 0)  # the last word: the step that produced it
    return rows


def word_alignment(
    attention: Tensor, n_words: int, content_based: bool, convention: str = "paper"
) -> list[int]:
    """Source position aligned to each of ``n_words`` target words (see :func:`alignment_rows`)."""
    return alignment_rows(attention, n_words, content_based, convention).argmax(-1).tolist()


def replace_unks(
    words: Sequence[str],
    src_words: Sequence[str],
    positions: Sequence[int],
    dictionary: Mapping[str, str] | None = None,
    unk: str = "<unk>",
) -> list[str]:
    """Replace each ``unk`` in ``words`` by the translation or copy of its aligned source word.

    The dictionary is consulted with the word as it is, then lowercased (MUSE lists
    lowercased words); a word it does not know is copied.
    """
    dictionary = dictionary or {}
    out = []
    for word, pos in zip(words, positions):
        if word == unk and 0 <= pos < len(src_words):
            source = src_words[pos]
            word = dictionary.get(source) or dictionary.get(source.lower()) or source
        out.append(word)
    return out


class Rendered(NamedTuple):
    """A hypothesis as words: the output ``words`` (stray ``<s>`` and ``<pad>`` left out) and,
    for each word filled in by unknown-word replacement, the source position it came from."""

    words: list[str]
    replaced: dict[int, int]


def render(
    ids: Sequence[int],
    itos: Sequence[str],
    src_words: Sequence[str] | None = None,
    attention: Tensor | None = None,
    content_based: bool = True,
    dictionary: Mapping[str, str] | None = None,
    convention: str = "paper",
) -> Rendered:
    """The words of a hypothesis (``ids`` in a vocabulary of words ``itos``); with
    ``src_words`` and its per-step ``attention`` (T, S), each ``<unk>`` replaced
    (:func:`replace_unks`). Replacement works on the raw output, one word per step, so that
    each word keeps its own attention vector; stray ``<s>``/``<pad>`` are dropped afterwards."""
    words = [itos[i] for i in ids]
    replaced: dict[int, int] = {}
    if src_words and attention is not None and UNK in words:
        where = word_alignment(attention, len(words), content_based, convention)
        replaced = {
            i: where[i] for i, w in enumerate(words) if w == UNK and 0 <= where[i] < len(src_words)
        }
        words = replace_unks(words, src_words, where, dictionary, UNK)
    kept = [i for i, w in enumerate(words) if w not in (PAD, BOS)]
    moved = {i: n for n, i in enumerate(kept)}
    replaced = {moved[i]: s for i, s in replaced.items() if i in moved}
    return Rendered([words[i] for i in kept], replaced)
