"""What a model attended to while translating one sentence, as the Python API, the page and
``--show-attention`` show it (:class:`AttentionMap`).

The matrix comes from a forced pass over the chosen translation
(:func:`~luong_lit.decoding.forced.forced_pass`): the same ``a_t`` the search computed, with
each step's ``p_t`` besides (local attention). The links are the ones ``align`` takes
(footnote 14's convention, or ``align_convention``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from torch import Tensor

from luong_lit.data.vocab import EOS
from luong_lit.decoding.forced import Forced, attention_links


@dataclass
class AttentionMap:
    """What the model attended to while translating one sentence.

    ``source``: the source words (then ``</s>`` for a model that reads it, ``src_eos``);
    ``target``: the output words, then ``</s>``, both as the user sees them (cased, unescaped,
    unknown words replaced). ``weights[t][s]``: ``a_t`` of step ``t``, the step that predicted
    ``target[t]``, over source word ``s``. ``p_t``: each step's window centre (local attention;
    None for global), with window half-width ``D``. ``links``: ``(source, target)`` word pairs
    under footnote 14's convention, as ``align`` takes them. ``replaced``: for each target word
    that ``replace_unk`` filled in, the source word it came from.
    """

    source: list[str]
    target: list[str]
    weights: list[list[float]]
    p_t: list[float] | None = None
    D: int | None = None
    links: list[tuple[int, int]] = field(default_factory=list)
    replaced: dict[int, int] = field(default_factory=dict)

    def arrows(self) -> str:
        """The output's words, each with the source word its attention chose (``word→source``,
        as OpenNMT-py's attention debug shows it), in the words the reader sees."""
        chosen = {j: s for s, j in self.links}
        words = self.target[:-1]  # without </s>
        return " ".join(
            f"{w}→{self.source[chosen[j]]}" if j in chosen else w for j, w in enumerate(words)
        )


def empty_map() -> AttentionMap:
    """The map of an empty source: nothing was read, nothing attended to (a new one each time:
    the caller may fill it)."""
    return AttentionMap([], [], [])


def links_of(
    weights: Tensor, n_words: int, content_based: bool, convention: str
) -> list[tuple[int, int]]:
    """``(source, target)`` links of ``n_words`` target words from per-step ``weights``."""
    return sorted(attention_links([weights], [n_words], content_based, convention)[0],
                  key=lambda x: (x[1], x[0]))  # fmt: skip


def attention_map(
    forced: Forced, source: list[str], target: list[str], n_src: int, *, content_based: bool,
    convention: str, replaced: dict[int, int], D: int | None, has_attention: bool = True,
) -> AttentionMap:  # fmt: skip
    """The map of one sentence: ``source`` and ``target`` the words shown (``target`` without
    its ``</s>``), ``n_src`` the source words the model read (links never go to ``</s>``)."""
    shown_src = source + [EOS] * (forced.attention.size(1) - len(source))
    on_words = forced.attention[:, :n_src]
    links = links_of(on_words, len(target), content_based, convention) if has_attention else []
    p_t = None if forced.p_t is None else forced.p_t.tolist()
    return AttentionMap(
        shown_src, target + [EOS], forced.attention.tolist(), p_t,
        D if p_t is not None else None, links, replaced,
    )  # fmt: skip
