"""A loaded model (or ensemble) with its tokenisers and search: text lines in, text lines out.

Shared by ``translate`` (files, pipes and interactive use) and anything else that serves a
model. Input is made the way the model's training text was (:mod:`luong_lit.data.model_data`),
and the output is made natural again (detokenised, and recased for a lowercased corpus).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from luong_lit.checkpoint import load_models
from luong_lit.cli import beam_config, check_beam_fits
from luong_lit.data.dictionary import load_dictionary
from luong_lit.data.model_data import tokenizers
from luong_lit.data.preprocess import RecipeDetokenizer
from luong_lit.decoding.corpus import Translation, decode_corpus, output_words
from luong_lit.decoding.unk import word_alignment

log = logging.getLogger("luong_lit.translate")


def limit_length(src: list[list[str]], max_len: int | None, mode: str) -> list[list[str]]:
    """Overlong sources are truncated (``truncate``), left out with an empty output (``skip``),
    or decoded whole (``keep``)."""
    if not max_len or mode == "keep":
        return src
    n_long = sum(len(s) > max_len for s in src)
    if n_long:
        log.warning("%d input lines are longer than %d tokens (%s)", n_long, max_len, mode)
    if mode == "truncate":
        return [s[:max_len] for s in src]
    return [s if len(s) <= max_len else [] for s in src]


class Translator:
    """A loaded model (or ensemble) with its tokenisers and search: lines in, lines out."""

    def __init__(self, args) -> None:
        self.args = args
        self.model, self.src_vocab, self.tgt_vocab, metas = load_models(
            args.checkpoints, args.combine, args.device
        )
        self.tok_src, self.detok_tgt = tokenizers(
            metas[0], args.pretokenized, self.src_vocab, self.tgt_vocab
        )
        self.beam = beam_config(args)
        check_beam_fits(self.beam, self.tgt_vocab)
        self.dictionary = load_dictionary(args.dict) if args.dict else None

    def decode(self, lines: Sequence[str], progress: bool = False):
        """``(source tokens, translations)`` of ``lines``."""
        args = self.args
        src_words = limit_length(
            [self.tok_src.tokenize(x) for x in lines], args.max_src_len, args.overlong
        )
        out = decode_corpus(
            self.model,
            [self.src_vocab.encode(s) for s in src_words],
            args.batch_size,
            self.beam,
            keep_attention=args.replace_unk or getattr(args, "show_attention", False),
            progress=progress,
            workers=args.workers,
            int8=args.int8,
        )
        return src_words, out

    def __call__(self, lines: Sequence[str], progress: bool = False) -> list[str]:
        args = self.args
        src_words, out = self.decode(lines, progress)
        self.last = (src_words, out)
        content = self.model.content_based if args.replace_unk else True  # members may differ
        unk_args = (content, self.dictionary, args.align_convention)
        replace_src = src_words if args.replace_unk else None
        if args.n_best > 1:
            return n_best_lines(
                out, self.tgt_vocab, self.detok_tgt, args.n_best, replace_src, *unk_args
            )
        words = output_words(out, self.tgt_vocab, replace_src, *unk_args)
        if isinstance(self.detok_tgt, RecipeDetokenizer):  # recasing: copied words as typed
            cased = [self.tok_src.cased(x) for x in lines]
            return [self.detok_tgt.detokenize(w, c) if w else "" for w, c in zip(words, cased)]
        return [self.detok_tgt.detokenize(w) if w else "" for w in words]

    def n_best(self, lines: Sequence[str]) -> list[list[dict]]:
        """For each line, ``args.n_best`` ``{"text", "score"}`` translations, best first."""
        args = self.args
        src_words, out = self.decode(lines)
        content = self.model.content_based if args.replace_unk else True
        replace_src = src_words if args.replace_unk else None
        unk_args = (content, self.dictionary, args.align_convention)
        lists = n_best_lists(
            out, self.tgt_vocab, self.detok_tgt, args.n_best, replace_src, *unk_args
        )
        return [[{"text": t, "score": round(sc, 4)} for t, sc in pairs] for pairs in lists]

    def attention_lines(self) -> list[str]:
        """For the last call: each output token with the source token its attention chose,
        ``token→source`` (as OpenNMT-py's attention debug shows it)."""
        src_words, out = self.last
        content = getattr(self.model, "content_based", True)
        lines = []
        for words, t in zip(src_words, out):
            tokens = [self.tgt_vocab.itos[i] for i in t.ids]
            if t.attention is None or not tokens or not words:
                lines.append(" ".join(tokens))
                continue
            where = word_alignment(t.attention, len(tokens), content, self.args.align_convention)
            lines.append(
                " ".join(f"{w}→{words[min(j, len(words) - 1)]}" for w, j in zip(tokens, where))
            )
        return lines


def translate_lines(lines: Sequence[str], args, progress: bool = True) -> list[str]:
    """Translate ``lines`` with the model(s) of ``args``."""
    return Translator(args)(lines, progress)


def n_best_lists(out, tgt_vocab, detok, n: int, src_words=None, *unk_args) -> list[list]:
    """For each input, exactly ``n`` ``(translation, score)`` pairs, best first; an empty
    input gets ``n`` empty translations with score 0. With ``src_words``, each hypothesis has
    its ``<unk>`` words replaced through its own attention (``unk_args``: as
    :func:`output_words` takes them)."""
    lists = []
    for i, tr in enumerate(out):
        hyps = [Translation(h.tokens, h.attention, h.score) for h in tr.n_best[:n]]
        srcs = None if src_words is None else [src_words[i]] * len(hyps)
        words = output_words(hyps, tgt_vocab, srcs, *unk_args)
        pairs = [(detok.detokenize(w) if w else "", h.score) for w, h in zip(words, hyps)]
        lists.append(pairs + [("", 0.0)] * (n - len(hyps)))
    return lists


def n_best_lines(out, tgt_vocab, detok, n: int, src_words=None, *unk_args) -> list[str]:
    """``i ||| translation ||| score`` lines, as Moses and fairseq write n-best lists."""
    lists = n_best_lists(out, tgt_vocab, detok, n, src_words, *unk_args)
    return [
        f"{i} ||| {text} ||| {score:.4f}" for i, pairs in enumerate(lists) for text, score in pairs
    ]
