"""A model at decode time, as every caller decodes: the validation callbacks, ``evaluate``,
``align``, ``translate``, ``serve`` and the Python API.

An :class:`Inference` holds a model (or an ensemble) in an engine's decode-time form, made
once, and decodes through the pure functions of :mod:`luong_lit.decoding`: searches (greedy or
beam or sampling, one :class:`~luong_lit.decoding.search.Search` for all),
the output words with unknown words replaced, forced passes over given translations, and word
alignments under footnote 14's convention or the other one. A model in training mode is
decoded in eval mode (dropout off) and left as it was. Tokenised BLEU is multi-bleu.perl's, the
BLEU of the paper's Tables 1, 3 and 4 (:mod:`luong_lit.metrics.bleu`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import NamedTuple

from luong_lit.decoding.corpus import decode_corpus, output_words
from luong_lit.decoding.forced import Forced, attention_links, forced_pass, member_links
from luong_lit.decoding.search import GREEDY, Hypothesis, Search
from luong_lit.engines import make_engine
from luong_lit.nn.interface import AnyDecodeModel, HasFacts
from luong_lit.nn.modes import evaluating


class SplitOutput(NamedTuple):
    """A split's translations (each source's n-best hypotheses, best first) and the best
    one's words before and (with unk replacement) after."""

    hypotheses: list[list[Hypothesis]]
    words: list[list[str]]
    replaced: list[list[str]] | None


class Inference(HasFacts):
    """A model (or ensemble, a :class:`~luong_lit.nn.interface.DecodeModel`) in its
    decode-time form, with its target vocabulary and the model's facts
    (``content_based``, ``has_attention``, ...: :class:`~luong_lit.nn.interface.HasFacts`).

    ``engine``: an engine or its name (default ``fast``); ``int8``: the fast engine's 8-bit
    products for searches (forced passes keep the float weights, as perplexity does).
    """

    def __init__(
        self, model: AnyDecodeModel, tgt_vocab, *, engine=None, int8: str | None = None,
        graphs: bool = False,
    ) -> None:  # fmt: skip
        self.model, self.tgt_vocab, self.int8, self.graphs = model, tgt_vocab, int8, graphs
        self.facts = model.facts  # what the model is: each of its forms hands it on
        self.engine = make_engine() if engine is None else make_engine(engine)
        with evaluating(model):
            self.stepper = self.engine.for_decoding(model, int8)  # constants computed once
        self._float: AnyDecodeModel | None = None if int8 else self.stepper

    @property
    def float_stepper(self) -> AnyDecodeModel:
        """The decode-time form without 8-bit products: forced passes read the float weights."""
        if self._float is None:
            with evaluating(self.model):
                self._float = self.engine.for_decoding(self.model)
        return self._float

    # ------------------------------------------------------------------ searching
    def decode(
        self, src_ids: Sequence[Sequence[int]], *, search: Search = GREEDY,
        batch_size: int | None = None, keep_attention: bool = False, workers: int = 1,
        progress: bool | Callable[[int], None] = False,
        prefixes: Sequence[Sequence[int]] | None = None,
    ) -> list[list[Hypothesis]]:  # fmt: skip
        """Every source translated, in input order: its n-best hypotheses, best first
        (``keep_attention``: each one's per-step ``a_t``, for unknown words; ``prefixes``: the
        target ids each source's translations begin with)."""
        with evaluating(self.model):
            return decode_corpus(
                self.stepper, src_ids, search=search, batch_size=batch_size,
                keep_attention=keep_attention, progress=progress, workers=workers,
                prefixes=prefixes, graphs=self.graphs,
            )  # fmt: skip

    def words(
        self, found: Sequence[Sequence[Hypothesis]], *, src_words=None,
        dictionary: Mapping[str, str] | None = None, convention: str = "paper",
    ) -> list[list[str]]:  # fmt: skip
        """The best hypothesis' words; with ``src_words``, each ``<unk>`` replaced by its
        aligned source word (through ``dictionary`` where it has an entry)."""
        return output_words(
            found, self.tgt_vocab, src_words, self.content_based, dictionary, convention
        )

    def split(
        self, split, *, search: Search = GREEDY, batch_size: int | None = 128,
        max_sentences: int | None = None, replace_unk: bool = False,
        dictionary: Mapping[str, str] | None = None, convention: str = "paper",
        workers: int = 1, progress: bool | Callable[[int], None] = False,
    ) -> SplitOutput:  # fmt: skip
        """The first ``max_sentences`` sources of ``split`` translated; with ``replace_unk``, the
        words after unknown-word replacement too."""
        src_ids = split.src_ids[:max_sentences]
        out = self.decode(
            src_ids, search=search, batch_size=batch_size, keep_attention=replace_unk,
            workers=workers, progress=progress,
        )  # fmt: skip
        replaced = None
        if replace_unk:
            src_words = split.src_tokens[: len(src_ids)]
            replaced = self.words(
                out, src_words=src_words, dictionary=dictionary, convention=convention
            )
        return SplitOutput(out, self.words(out), replaced)

    # ------------------------------------------------------------------ reading given text
    def forced(
        self, src_ids, tgt_ids, *, scores: bool = False, eos_slot: bool = False,
        batch_size: int = 32,
    ) -> list[Forced]:  # fmt: skip
        """Each pair read by forced decoding (:func:`~luong_lit.decoding.forced.forced_pass`)."""
        with evaluating(self.model):
            return forced_pass(
                self.float_stepper, src_ids, tgt_ids, batch_size, scores=scores,
                eos_slot=eos_slot,
            )  # fmt: skip

    def alignments(
        self, src_ids, tgt_ids, conventions: Sequence[str], members: Sequence[str] | None = None
    ) -> dict[str, list[set[tuple[int, int]]]]:
        """``(source, target)`` links of each pair under each convention, from one forced pass
        (the conventions differ only in which step's ``a_t`` is read). ``members``: one
        convention per member of an ensemble instead, keyed ``per member: ...``
        (:func:`~luong_lit.decoding.forced.member_links`)."""
        if members:
            nets = list(self.float_stepper.members)
            with evaluating(self.model):
                links = member_links(nets, src_ids, tgt_ids, members)
            return {"per member: " + ",".join(members): links}
        attention = [f.attention for f in self.forced(src_ids, tgt_ids)]
        lens = [len(t) for t in tgt_ids]
        return {c: attention_links(attention, lens, self.content_based, c) for c in conventions}
