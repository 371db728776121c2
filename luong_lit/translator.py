"""The kit from Python: a trained model (or ensemble) with its tokenisers and search.

    import luong_lit

    model = luong_lit.load("RUN/checkpoints/best.ckpt", beam=5)
    model.translate(["A man rides a bike."])       # ['Ein Mann fährt Fahrrad.']
    model.n_best(["A man rides a bike."], 3)       # [[Scored(text=..., score=...), ...]]
    model.attention("A man rides a bike.")         # tokens, a_t of every step, p_t, links
    model.score(["A man rides a bike."], ["Ein Mann fährt Fahrrad."])   # log-probabilities
    model.align(["A man rides a bike."], ["Ein Mann fährt Fahrrad."])   # (source, target) links

Text goes in as it is written and comes out natural: it is made the way the model's training
text was (:mod:`luong_lit.data.loading.model_data`), and the output detokenised and recased. The
``translate``, ``evaluate``, ``align`` and ``serve`` commands run through the same objects.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

from luong_lit.attention_map import EMPTY, AttentionMap, attention_map, links_of
from luong_lit.checkpoint import load_models
from luong_lit.data.loading.model_data import tokenizers
from luong_lit.data.text.dictionary import load_dictionary
from luong_lit.data.text.preprocess import RecipeDetokenizer, RecipeTokenizer
from luong_lit.data.vocab import BOS, PAD, UNK
from luong_lit.decoding.beam import BeamConfig
from luong_lit.decoding.corpus import Translation, decode_corpus
from luong_lit.decoding.forced import forced_pass
from luong_lit.decoding.unk import replace_unks, word_alignment
from luong_lit.engines import make_engine
from luong_lit.errors import UsageError
from luong_lit.options import DecodeOptions

log = logging.getLogger("luong_lit.translate")


class Scored(NamedTuple):
    """A translation and its score (the sum of its words' log-probabilities; None for greedy)."""

    text: str
    score: float | None


@dataclass
class Output:
    """One input line translated: the best text, the ``n`` best with scores, whether the source
    was cut to ``max_src_len``, and (when asked) the attention of the best translation."""

    text: str
    hypotheses: list[Scored]
    truncated: bool = False
    attention: AttentionMap | None = None


def load(checkpoints: str | os.PathLike | Sequence, **options) -> Translator:
    """A :class:`Translator` for one checkpoint or an ensemble of several, with
    :class:`~luong_lit.options.DecodeOptions` given as keywords (``beam=5``, ...)."""
    paths = [checkpoints] if isinstance(checkpoints, (str, os.PathLike)) else list(checkpoints)
    return Translator.load(paths, DecodeOptions(**options))


class Translator:
    """A loaded model (or ensemble) with its tokenisers, engine and search."""

    def __init__(self, model, src_vocab, tgt_vocab, meta: dict, options: DecodeOptions) -> None:
        self.model, self.src_vocab, self.tgt_vocab = model, src_vocab, tgt_vocab
        self.meta, self.options = meta, options
        self.text = tokenizers(meta, options.pretokenized, src_vocab, tgt_vocab)
        self.engine = make_engine(options.engine)
        self.stepper = self.engine.for_decoding(model, options.int8)  # constants computed once
        self._forced_stepper = None  # forced passes keep the float weights (int8 is for search)
        self.search(options)  # options this model cannot decode with are refused here
        self.dictionary = load_dictionary(options.dictionary) if options.dictionary else None

    @classmethod
    def load(cls, paths: Sequence, options: DecodeOptions | None = None) -> Translator:
        options = options or DecodeOptions()
        model, src_vocab, tgt_vocab, metas = load_models(paths, options.combine, options.device)
        return cls(model, src_vocab, tgt_vocab, metas[0], options)

    # ------------------------------------------------------------------ the API
    def translate(self, texts: str | Sequence[str], progress: bool = False) -> list[str]:
        """The best translation of each text (one text: a list of one)."""
        return [o.text for o in self.run(_lines(texts), progress=progress)]

    def n_best(self, texts: str | Sequence[str], n: int) -> list[list[Scored]]:
        """Exactly ``n`` scored translations of each text, best first (empty ones after the
        search's own, and for an empty text)."""
        return [o.hypotheses for o in self.run(_lines(texts), n)]

    def attention(self, text: str) -> AttentionMap:
        """The attention of the best translation of ``text`` (see :class:`AttentionMap`)."""
        return self.run([text], attention=True)[0].attention

    def score(self, src: str | Sequence[str], tgt: str | Sequence[str]) -> list[float]:
        """``log p(tgt | src)`` of each pair: the sum over the target words and ``</s>``."""
        return [float(f.logprob.sum()) for f in self._forced(src, tgt, scores=True)[0]]

    def align(
        self, src: str | Sequence[str], tgt: str | Sequence[str]
    ) -> list[list[tuple[int, int]]]:
        """``(source, target)`` word links of each pair by forced decoding (footnote 14's
        convention, or ``align_convention``), in the tokens the model reads."""
        forced, src_words, tgt_words = self._forced(src, tgt)
        based, convention = self._content_based(), self.options.align_convention
        return [
            links_of(f.attention[:, : len(w)], len(t), based, convention) if t and w else []
            for f, w, t in zip(forced, src_words, tgt_words)
        ]

    @property
    def float_stepper(self):
        """The model in its decode-time form without 8-bit products: forced passes (scores,
        alignments, attention) read the float weights, as perplexity does."""
        if self._forced_stepper is None:
            self._forced_stepper = (
                self.engine.for_decoding(self.model) if self.options.int8 else self.stepper
            )
        return self._forced_stepper

    # ------------------------------------------------------------------ the work
    def search(self, opts: DecodeOptions, n_best: int = 1) -> BeamConfig:
        """The search ``opts`` ask for (:meth:`DecodeOptions.search`), checked against this
        model: the beam cannot be wider than the target vocabulary."""
        search = opts.search(n_best=n_best)
        if search.beam_size > len(self.tgt_vocab):
            raise UsageError(
                f"beam size {search.beam_size} is larger than the model's target vocabulary "
                f"({len(self.tgt_vocab)} words)"
            )
        return search

    def run(
        self,
        lines: Sequence[str],
        n: int = 1,
        attention: bool = False,
        progress: bool = False,
        options: DecodeOptions | None = None,
    ) -> list[Output]:
        """Translate ``lines``, keeping ``n`` hypotheses each, and the attention if asked.

        ``options``: this call's search and unknown-word options, instead of the translator's
        (its model, engine and dictionary stay as loaded)."""
        opts = options or self.options
        search = self.search(opts, n)
        sources, cut = self._sources(lines, opts)
        keep = opts.replace_unk  # the search's own attention places replaced words, nothing else
        ids = [self.src_vocab.encode(s) for s in sources]
        out = decode_corpus(
            self.stepper, ids, opts.batch_size, search, keep, progress, opts.workers
        )
        results, best, cased = [], [], [self._cased(line) for line in lines]
        for line_cased, src, tr, was_cut in zip(cased, sources, out, cut):
            hyps = (
                [tr] if n == 1 else [Translation(h.tokens, h.attention, h.score) for h in tr.n_best]
            )
            rendered = [self._render(line_cased, src, h, opts) for h in hyps[:n]]
            scored = [Scored(text, h.score) for (text, _, _), h in zip(rendered, hyps)]
            scored += [Scored("", 0.0)] * (n - len(scored))  # an empty input, a short list
            results.append(Output(scored[0].text, scored, was_cut))
            if attention:  # the best is the n-best list's first (an empty input has none)
                best.append(rendered[0] if rendered else self._render(line_cased, src, tr, opts))
        if attention:
            self._attach_attention(cased, sources, best, results, opts)
        return results

    def _sources(self, lines: Sequence[str], opts: DecodeOptions) -> tuple[list, list[bool]]:
        """Source tokens of each line, cut (or dropped) beyond ``max_src_len``."""
        tokens = [self.text.source.tokenize(x) for x in lines]
        limit = opts.max_src_len
        cut = [bool(limit) and opts.overlong != "keep" and len(t) > limit for t in tokens]
        if any(cut):
            log.warning(
                "%d input lines are longer than %d tokens (%s)", sum(cut), limit, opts.overlong
            )
        if opts.overlong == "truncate":
            tokens = [t[:limit] if c else t for t, c in zip(tokens, cut)]
        elif opts.overlong == "skip":
            tokens = [[] if c else t for t, c in zip(tokens, cut)]
        return tokens, cut

    def _render(self, cased: list[str] | None, src: list[str], hyp, opts: DecodeOptions):
        """The text of a hypothesis, its words and where replaced words came from (``cased``:
        the source line's words as typed, from :meth:`_cased`)."""
        words = [self.tgt_vocab.itos[i] for i in hyp.ids]
        replaced = {}
        if opts.replace_unk and UNK in words and hyp.attention is not None and src:
            where = word_alignment(
                hyp.attention, len(words), self._content_based(), opts.align_convention
            )
            replaced = {
                i: where[i] for i, w in enumerate(words) if w == UNK and 0 <= where[i] < len(src)
            }
            words = replace_unks(words, src, where, self.dictionary, UNK)
        kept = [i for i, w in enumerate(words) if w not in (PAD, BOS)]
        words = [words[i] for i in kept]
        replaced = {kept.index(i): s for i, s in replaced.items() if i in kept}
        if not words:
            return "", words, replaced
        if isinstance(self.text.detokenizer, RecipeDetokenizer):  # copied words as typed
            return self.text.detokenizer.detokenize(words, cased), words, replaced
        return self.text.detokenizer.detokenize(words), words, replaced

    def _cased(self, line: str) -> list[str] | None:
        """The line's words as typed, where the output is made natural text (else None)."""
        if not isinstance(self.text.detokenizer, RecipeDetokenizer):
            return None
        tok = self.text.source
        return tok.cased(line) if isinstance(tok, RecipeTokenizer) else tok.tokenize(line)

    def _content_based(self) -> bool:
        return getattr(self.model, "content_based", True)

    def _attach_attention(self, cased, sources, best, results, opts) -> None:
        """Each best translation read again by forced decoding, for its ``a_t`` and ``p_t``
        (over the words shown: stray ``<s>``/``<pad>`` symbols left out)."""
        rows = [i for i, (src, (_, words, _)) in enumerate(zip(sources, best)) if src]
        src_ids = [self.src_vocab.encode(sources[i]) for i in rows]
        tgt_ids = [self.tgt_vocab.encode(best[i][1]) for i in rows]
        eos = bool(getattr(self.model, "src_eos", False))  # (an ensemble: its words only)
        forced = dict(zip(rows, forced_pass(self.float_stepper, src_ids, tgt_ids, eos_slot=eos)))
        D = getattr(getattr(self.model, "attention", None), "D", None)
        for i, (line_cased, src, (_, words, replaced), res) in enumerate(
            zip(cased, sources, best, results)
        ):
            if i not in forced:
                res.attention = EMPTY
                continue
            res.attention = attention_map(
                forced[i], self._display_source(line_cased, src),
                self._display_target(words, line_cased),
                len(src), content_based=self._content_based(), convention=opts.align_convention,
                replaced=replaced, D=D, has_attention=self.model_has_attention,
            )  # fmt: skip

    @property
    def model_has_attention(self) -> bool:
        return getattr(self.model, "has_attention", True)

    def _display_source(self, cased: list[str] | None, src: list[str]) -> list[str]:
        tok = self.text.source
        if not isinstance(tok, RecipeTokenizer) or cased is None:
            return list(src)
        cased = cased[: len(src)]
        return [tok.recipe.show(w) for w in cased] if len(cased) == len(src) else list(src)

    def _display_target(self, words: list[str], cased: list[str] | None) -> list[str]:
        detok = self.text.detokenizer
        if not isinstance(detok, RecipeDetokenizer):
            return list(words)
        return detok.words(words, cased)

    def _forced(self, src, tgt, scores: bool = False):
        srcs, tgts = _lines(src), _lines(tgt)
        if len(srcs) != len(tgts):
            raise UsageError(f"{len(srcs)} sources but {len(tgts)} targets")
        src_words = [self.text.source.tokenize(x) for x in srcs]
        tgt_words = [self.text.target.tokenize(x) for x in tgts]
        src_ids = [self.src_vocab.encode(s) for s in src_words]
        tgt_ids = [self.tgt_vocab.encode(t) for t in tgt_words]
        if any(not s for s in src_ids):
            raise UsageError("every source needs at least one word")
        forced = forced_pass(self.float_stepper, src_ids, tgt_ids, scores=scores)
        return forced, src_words, tgt_words


def _lines(texts: str | Sequence[str]) -> list[str]:
    return [texts] if isinstance(texts, str) else list(texts)
