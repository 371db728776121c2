"""Target prefixes at the Python API's door, and kept verbatim in what it answers.

A prefix is the text a translation must begin with (:mod:`luong_lit.decoding.prefix`): one per
text, None or empty for none. It is tokenised as a given translation is, and its tokens stand
in the output as they are (an out-of-vocabulary word of the prefix is read as ``<unk>`` but
shown as typed, never replaced). The text answered begins with the prefix as it was given
wherever the rendered output begins with the rendered prefix (the detokeniser and the recaser
change nothing across the join); elsewhere it is the output as rendered.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from luong_lit.data.vocab import BOS_ID, EOS_ID, PAD_ID, UNK_ID, Vocab
from luong_lit.decoding.prefix import too_long
from luong_lit.decoding.search import Bounds
from luong_lit.decoding.unk import Rendered
from luong_lit.translator.arguments import texts_of
from luong_lit.validate import OptionError

#: the prefixes of a call: one str for one text, or one str or None per text (None: none)
Prefix = str | Sequence[str | None] | None


def prefix_texts(prefix: Any, n: int) -> list[str] | None:
    """``prefix`` (a str for one text, or one str or None per text) as ``n`` stripped lines;
    None when no text has one."""
    if prefix is None:
        return None
    items = prefix if isinstance(prefix, str) else _items(prefix)
    lines = [x.strip() for x in texts_of(items, "prefix")]
    if len(lines) != n:
        raise OptionError.keyword(f"{{prefix}}: {len(lines)} prefixes for {n} texts", "prefix")
    return lines if any(lines) else None


def _items(prefix: Any) -> Any:
    """A sequence of prefixes with None read as no prefix ("")."""
    if isinstance(prefix, (list, tuple)):
        return ["" if p is None else p for p in prefix]
    return prefix  # texts_of says what is wrong with it


def prefix_ids(tokens: Sequence[str], tgt_vocab: Vocab) -> list[int]:
    """A prefix's target ids; a token that is a special symbol (``</s>`` would end the
    translation) is read as ``<unk>``, and shown as typed."""
    return [UNK_ID if i in (PAD_ID, BOS_ID, EOS_ID) else i for i in tgt_vocab.encode(tokens)]


def check_lengths(tokens: Sequence[Sequence[str]], src_lens: Sequence[int], search: Bounds) -> None:
    """Refuse a prefix longer than the most words its source's translation may have."""
    import torch

    max_len = search.bounds(torch.tensor(list(src_lens), dtype=torch.long))[0].tolist()
    lens = [len(t) if s else 0 for t, s in zip(tokens, src_lens)]  # an empty source: no output
    i = too_long(lens, max_len)
    if i is not None:
        raise OptionError.keyword(
            f"the {{prefix}} of line {i + 1} has {lens[i]} tokens, more than the {max_len[i]} "
            f"that the translation of its {src_lens[i]}-token source may have (raise "
            "{max_len_ratio})",
            "prefix", "max_len_ratio",
        )  # fmt: skip


def with_prefix(rendered: Rendered, tokens: Sequence[str]) -> Rendered:
    """``rendered`` with its first words the prefix's ``tokens`` as given (none replaced)."""
    n = len(tokens)
    if not n:
        return rendered
    if len(rendered.words) < n:
        raise RuntimeError("a translation lost its prefix")  # the search keeps it: never here
    replaced = {i: s for i, s in rendered.replaced.items() if i >= n}
    return Rendered(list(tokens) + rendered.words[n:], replaced)


def verbatim(text: str, shown_prefix: str, prefix: str) -> str:
    """``text`` beginning with ``prefix`` as given where it begins with ``shown_prefix``, the
    prefix's tokens as rendered."""
    if prefix and shown_prefix and text.startswith(shown_prefix):
        return prefix + text[len(shown_prefix) :]
    return text
