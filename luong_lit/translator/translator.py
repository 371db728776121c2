"""The kit from Python: a trained model (or ensemble) with its text handling and its decoder.

    import luong_lit

    model = luong_lit.load("RUN/checkpoints/best.ckpt", beam=5)
    model.translate(["A man rides a bike."])       # ['Ein Mann fährt Fahrrad.']
    model.n_best(["A man rides a bike."], 3)       # [[Scored(text=..., score=...), ...]]
    model.attention("A man rides a bike.")         # tokens, a_t of every step, p_t, links
    model.translate(["A man rides a bike."], prefix="Ein Mann")  # ['Ein Mann fährt Fahrrad.']
    model.translate(["A man rides a bike."], sampling=True, top_p=0.9, seed=1)  # a sample
    model.score(["A man rides a bike."], ["Ein Mann fährt Fahrrad."])   # log-probabilities
    model.align(["A man rides a bike."], ["Ein Mann fährt Fahrrad."])   # (source, target) links

Text goes in as it is written and comes out natural: it is made the way the model's training
text was (:mod:`luong_lit.data.text.model_text`), and the output detokenised and recased. The
``translate``, ``evaluate``, ``align`` and ``serve`` commands run through the same objects.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from typing import Any

from luong_lit.checkpoint import CheckpointMeta, load_models
from luong_lit.data.loading.model_data import model_text
from luong_lit.data.text.dictionary import load_dictionary
from luong_lit.data.text.model_text import SourceLine
from luong_lit.data.vocab import EOS, Vocab
from luong_lit.decoding.corpus import batch_size_for
from luong_lit.decoding.search import Hypothesis, beam_width
from luong_lit.decoding.unk import Rendered, render
from luong_lit.errors import UsageError
from luong_lit.inference import Inference
from luong_lit.nn.interface import AnyDecodeModel
from luong_lit.translator.arguments import (
    checkpoint_paths,
    cut_overlong,
    one_text,
    texts_of,
    token_pairs,
)
from luong_lit.translator.attention import AttentionMap, attention_map, empty_map
from luong_lit.translator.options import LoadOptions, SearchOptions, at_least
from luong_lit.translator.outputs import Output, Scored, TokenScores
from luong_lit.translator.prefixes import (
    Prefix,
    check_lengths,
    prefix_ids,
    prefix_texts,
    verbatim,
    with_prefix,
)
from luong_lit.validate import split_options, takes_options

log = logging.getLogger("luong_lit.translate")


@takes_options(LoadOptions, SearchOptions)
def load(
    checkpoints: str | os.PathLike[str] | Sequence[str | os.PathLike[str]], **options: Any
) -> Translator:
    """A :class:`Translator` for one checkpoint or an ensemble of several. ``options``: the
    :class:`LoadOptions` (``device="cuda"``, ...) and the calls' default
    :class:`SearchOptions` (``beam=5``, ...), as keywords."""
    paths = checkpoint_paths(checkpoints)
    groups = split_options(load, (LoadOptions, SearchOptions), options, keywords=True)
    return Translator.load(paths, *groups)


class Translator:
    """A loaded model (or ensemble) with its text handling, its decode-time form
    (:class:`~luong_lit.inference.Inference`) and default search."""

    def __init__(
        self, model: AnyDecodeModel, src_vocab: Vocab, tgt_vocab: Vocab, meta: CheckpointMeta,
        options: LoadOptions, search: SearchOptions | None = None,
    ) -> None:  # fmt: skip
        self.src_vocab, self.tgt_vocab = src_vocab, tgt_vocab
        self.meta, self.options = meta, options
        self.text = model_text(meta, options.pretokenized, src_vocab, tgt_vocab)
        self.inference = Inference(model, tgt_vocab, engine=options.engine, int8=options.int8,
                                   graphs=options.cuda_graphs)  # fmt: skip
        self.defaults = self.checked(search or SearchOptions())  # refused here if it cannot be
        self.dictionary = load_dictionary(options.dictionary) if options.dictionary else None
        self.batch_size = batch_size_for(next(model.parameters()).device, options.batch_size)

    @classmethod
    def load(
        cls, paths: Sequence[str | os.PathLike[str]], options: LoadOptions | None = None,
        search: SearchOptions | None = None,
    ) -> Translator:  # fmt: skip
        from luong_lit.plugins import load_plugins

        load_plugins()  # installed plugins and LUONG_LIT_USER_DIR: the parts a model may name
        options = options or LoadOptions()
        model, src_vocab, tgt_vocab, metas = load_models(paths, options.combine, options.device)
        return cls(model, src_vocab, tgt_vocab, metas[0], options, search)

    @property
    def model(self) -> AnyDecodeModel:
        """The network (or ensemble)."""
        return self.inference.model

    # ------------------------------------------------------------------ the API
    def translate(self, texts: str | Sequence[str], progress: bool = False,
                  prefix: Prefix = None, **search: Any) -> list[str]:  # fmt: skip
        """The best translation of each text (one text: a list of one); ``prefix``: the text
        each translation begins with (one str for one text, or one str or None per text);
        ``search``: this call's :class:`SearchOptions` (``beam=1``, ``sampling=True``, ...)."""
        lines, opts = texts_of(texts), self.search_options(**search)
        return [o.text for o in self.run(lines, opts, progress=progress, prefix=prefix)]

    def n_best(
        self, texts: str | Sequence[str], n: int, prefix: Prefix = None, **search: Any
    ) -> list[list[Scored]]:
        """Exactly ``n`` scored translations of each text, best first (empty ones after the
        search's own, and for an empty text); with ``sampling=True``, ``n`` samples."""
        at_least("n", n, 1)  # named as this call names it (the option: n_best)
        lines, opts = texts_of(texts), self.search_options(n_best=n, **search)
        return [o.hypotheses for o in self.run(lines, opts, prefix=prefix)]

    def attention(self, text: str, prefix: str | None = None, **search: Any) -> AttentionMap:
        """The attention of the best translation of ``text`` (see :class:`AttentionMap`)."""
        line, opts = one_text(text), self.search_options(**search)
        found = self.run([line], opts, attention=True, prefix=prefix)[0].attention
        assert found is not None  # run(attention=True) attaches every line's map
        return found

    def score(self, src: str | Sequence[str], tgt: str | Sequence[str]) -> list[float]:
        """``log p(tgt | src)`` of each pair: the sum over the target words and ``</s>``."""
        return [x.score for x in self.token_scores(src, tgt)]

    def token_scores(self, src: str | Sequence[str], tgt: str | Sequence[str]) -> list[TokenScores]:
        """Each pair's :meth:`score` and the log-probability of each of its target tokens."""
        src_tokens, tgt_tokens = token_pairs(self.text, src, tgt)
        src_ids, tgt_ids = self._ids(src_tokens, tgt_tokens)
        forced = self.inference.forced(src_ids, tgt_ids, scores=True, batch_size=self.batch_size)
        scores = []
        for f, tokens in zip(forced, tgt_tokens):
            assert f.logprob is not None  # scores=True: every pair's token log-probabilities
            scores.append(TokenScores(float(f.logprob.sum()), [*tokens, EOS], f.logprob.tolist()))
        return scores

    def align(
        self, src: str | Sequence[str], tgt: str | Sequence[str]
    ) -> list[list[tuple[int, int]]]:
        """``(source, target)`` word links of each pair by forced decoding (footnote 14's
        convention, or ``align_convention``), in the tokens the model reads."""
        convention = self.options.align_convention
        links = self.alignments(*token_pairs(self.text, src, tgt), [convention])[convention]
        return [sorted(x, key=lambda link: (link[1], link[0])) for x in links]

    def alignments(
        self, src_tokens: Sequence[Sequence[str]], tgt_tokens: Sequence[Sequence[str]],
        conventions: Sequence[str], members: Sequence[str] | None = None,
    ) -> dict[str, list[set[tuple[int, int]]]]:  # fmt: skip
        """Links of pairs given in the model's tokens, under each of ``conventions`` (or, for an
        ensemble, ``members``: one convention per member; :meth:`Inference.alignments`)."""
        return self.inference.alignments(*self._ids(src_tokens, tgt_tokens), conventions, members)

    # ------------------------------------------------------------------ the work
    def search_options(self, **changes: Any) -> SearchOptions:
        """This translator's default search with ``changes``, checked against the model."""
        return self.checked(self.defaults.replace(**changes) if changes else self.defaults)

    def readable_alignments(self) -> None:
        """Refuse now an ensemble whose attention cannot be read as one alignment (location and
        content-based members, footnote 14), before any decoding that would need it."""
        if self.inference.has_attention:
            self.inference.content_based  # noqa: B018 - raises for mixed members

    def checked(self, search: SearchOptions) -> SearchOptions:
        """``search``, refused if this model cannot decode with it: the beam cannot be wider
        than the target vocabulary, and unknown-word replacement needs alignments."""
        if search.replace_unk:
            self.readable_alignments()
        beam = beam_width(search.search())
        if beam > len(self.tgt_vocab):
            raise UsageError(
                f"beam size {beam} is larger than the model's target vocabulary "
                f"({len(self.tgt_vocab)} words)"
            )
        return search

    def run(
        self, lines: Sequence[str], search: SearchOptions | None = None, *,
        attention: bool = False, progress: bool = False, prefix: Prefix = None,
    ) -> list[Output]:  # fmt: skip
        """Translate ``lines`` with ``search`` (default: this translator's), keeping its
        ``n_best`` hypotheses each, and the attention of the best if asked; ``prefix``: the text
        each translation begins with (:meth:`translate`)."""
        opts = self.defaults if search is None else self.checked(search)
        sources, cut = self._sources(lines)
        given = prefix_texts(prefix, len(lines))
        tokens = self._prefix_tokens(given, sources, opts)
        out = self.inference.decode(
            [self.src_vocab.encode(s.tokens) for s in sources], search=opts.search(),
            batch_size=self.options.batch_size, keep_attention=opts.replace_unk,
            workers=self.options.workers, progress=progress,
            prefixes=None if given is None else [prefix_ids(t, self.tgt_vocab) for t in tokens],
        )  # fmt: skip
        texts = given or [""] * len(lines)  # each prefix's tokens and text (none: empty)
        made = [self._output(*line, opts) for line in zip(sources, out, cut, tokens, texts)]
        results, best = [m[0] for m in made], [m[1] for m in made]
        if attention:
            self._attach_attention(sources, best, results)
        return results

    def _output(
        self, source: SourceLine, hyps: list[Hypothesis], was_cut: bool, tokens: list[str],
        given: str, opts: SearchOptions,
    ) -> tuple[Output, Rendered]:  # fmt: skip
        """One line's :class:`Output` from its hypotheses, and its best as words (none for an
        empty input), its first words the prefix's ``tokens`` (``given``: the prefix's text)."""
        n = opts.n_best
        rendered = [with_prefix(self._render(source, h, opts), tokens) for h in hyps[:n]]
        texts = [self._text(r, source, tokens, given) for r in rendered]
        scored = [Scored(x, h.score) for x, h in zip(texts, hyps)]
        scored += [Scored("", 0.0)] * (n - len(scored))  # an empty input, a short list
        best = rendered[0] if rendered else Rendered([], {})  # the n-best list's first
        return Output(scored[0].text, scored, was_cut), best

    def check_prefix(self, lines: Sequence[str], prefix: Prefix, search: SearchOptions) -> None:
        """Refuse now the prefixes :meth:`run` would refuse (the server, before it queues)."""
        self._prefix_tokens(
            prefix_texts(prefix, len(lines)), self._sources(lines, False)[0], search
        )

    def _prefix_tokens(
        self, given: list[str] | None, sources: list[SourceLine], opts: SearchOptions
    ) -> list[list[str]]:
        """Each prefix's target tokens (none for an empty one), refused when longer than its
        source's translation may be."""
        if given is None:
            return [[] for _ in sources]
        tokens = [self.text.target_tokens(x) if x else [] for x in given]
        check_lengths(tokens, [len(s.tokens) for s in sources], opts.search())
        return tokens

    def _sources(
        self, lines: Sequence[str], warn: bool = True
    ) -> tuple[list[SourceLine], list[bool]]:
        """Each line as the model reads it, cut (or dropped) beyond ``max_src_len``."""
        sources = [self.text.source(x) for x in lines]
        limit, overlong = self.options.max_src_len or 0, self.options.overlong  # 0: no limit
        sources, cut = cut_overlong(sources, limit, overlong)
        if any(cut) and warn:
            log.warning("%d input lines are longer than %d tokens (%s)", sum(cut), limit, overlong)
        return sources, cut

    def _render(self, source: SourceLine, hyp: Hypothesis, opts: SearchOptions) -> Rendered:
        """A hypothesis' words, its ``<unk>`` replaced when ``opts`` asks for it."""
        src_words = source.tokens if opts.replace_unk else None
        return render(
            hyp.ids, self.tgt_vocab.itos, src_words, hyp.attention,
            self.inference.content_based if src_words else True, self.dictionary,
            self.options.align_convention,
        )  # fmt: skip

    def _text(
        self, rendered: Rendered, source: SourceLine, tokens: Sequence[str] = (), given: str = ""
    ) -> str:
        """The words as the text a user reads (detokenised, recased), beginning with the prefix
        as ``given`` where its ``tokens`` begin them (:func:`.prefixes.verbatim`)."""
        text = self.text.render(rendered.words, source) if rendered.words else ""
        if tokens:
            text = verbatim(text, self.text.render(list(tokens), source), given)
        return text

    def _attach_attention(
        self, sources: list[SourceLine], best: list[Rendered], results: list[Output]
    ) -> None:
        """Each best translation read again by forced decoding, for its ``a_t`` and ``p_t``
        (over the words shown: stray ``<s>``/``<pad>`` symbols left out)."""
        rows = [i for i, src in enumerate(sources) if src.tokens]
        src_ids = [self.src_vocab.encode(sources[i].tokens) for i in rows]
        tgt_ids = [self.tgt_vocab.encode(best[i].words) for i in rows]
        eos = self.model.src_eos  # (an ensemble: its words only)
        forced = dict(zip(rows, self.inference.forced(src_ids, tgt_ids, eos_slot=eos)))
        D = self.model.window
        for i, (source, shown, res) in enumerate(zip(sources, best, results)):
            if i not in forced:
                res.attention = empty_map()
                continue
            shown_target = self.text.show_target(shown.words, source)
            res.attention = attention_map(
                forced[i], self.text.show_source(source), shown_target,
                len(source.tokens), content_based=self.inference.content_based,
                convention=self.options.align_convention, replaced=shown.replaced, D=D,
                has_attention=self.inference.has_attention,
            )  # fmt: skip

    def _ids(
        self, src_tokens: Sequence[Sequence[str]], tgt_tokens: Sequence[Sequence[str]]
    ) -> tuple[list[list[int]], list[list[int]]]:
        src, tgt = self.src_vocab.encode, self.tgt_vocab.encode
        return [src(s) for s in src_tokens], [tgt(t) for t in tgt_tokens]
