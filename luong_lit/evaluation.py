"""Scoring a model's translations of a split: shared by training callbacks and ``evaluate``.

Pure functions over a model, a split (:class:`~luong_lit.data.loading.splits.Split`) and the
model's vocabularies; no Lightning. Tokenised BLEU is multi-bleu.perl's, the BLEU of the
paper's Tables 1, 3 and 4; detokenised BLEU is sacreBLEU 13a (Table 2; docs/paper_notes.md §13).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

from luong_lit.decoding.beam import BeamConfig
from luong_lit.decoding.corpus import Translation, decode_corpus, output_words
from luong_lit.engines import make_engine
from luong_lit.metrics.bleu import bleu_lines, corpus_bleu_detok, corpus_bleu_tok
from luong_lit.nn.modes import evaluating


class SplitOutput(NamedTuple):
    """A split's translations: output words before and (with unk replacement) after."""

    translations: list[Translation]
    words: list[list[str]]
    replaced: list[list[str]] | None


def translate_split(
    model,
    split,
    tgt_vocab,
    beam: BeamConfig | None = None,
    batch_size: int = 128,
    max_sentences: int | None = None,
    replace_unk: bool = False,
    dictionary: Mapping[str, str] | None = None,
    convention: str = "paper",
    engine=None,
    stepper=None,
    **decode_opts,
) -> SplitOutput:
    """Decode the first ``max_sentences`` sources of ``split`` (greedy when ``beam`` is None) in
    eval mode, in the decode-time form of ``engine`` (default: ``fast``), or with ``stepper``,
    a decode-time form already made (a translator's, 8-bit products included); with
    ``replace_unk``, also the words after unknown-word replacement. ``decode_opts`` go to
    :func:`~luong_lit.decoding.corpus.decode_corpus` (``workers``, ``progress``)."""
    src_ids = split.src_ids[:max_sentences]
    engine = make_engine() if engine is None else engine
    with evaluating(model):
        stepper = engine.for_decoding(model) if stepper is None else stepper
        out = decode_corpus(
            stepper, src_ids, batch_size, beam, keep_attention=replace_unk, **decode_opts
        )
    words = output_words(out, tgt_vocab)
    replaced = None
    if replace_unk:
        src_words = split.src_tokens[: len(src_ids)]
        replaced = output_words(
            out, tgt_vocab, src_words, model.content_based, dictionary, convention
        )
    return SplitOutput(out, words, replaced)


def bleu_scores(
    words: Sequence[Sequence[str]],
    refs: Sequence[str],
    lang: str,
    tokenizer=None,
    raw_refs: Sequence[str] | None = None,
) -> dict[str, float]:
    """Tokenised and detokenised BLEU of output tokens against ``refs``, lines of the words
    BLEU counts (:func:`~luong_lit.metrics.bleu.bleu_lines`; sentencepiece output is joined into
    words first). ``raw_refs``, where given, are the references of the detokenised BLEU."""
    text = bleu_lines(words, tokenizer)
    if raw_refs:
        detok = corpus_bleu_detok(text, raw_refs, lang, refs_detokenized=True)
    else:
        detok = corpus_bleu_detok(text, refs, lang)
    return {"bleu_tok": corpus_bleu_tok(text, refs), "bleu_detok": detok}


def split_bleu(
    model,
    split,
    tgt_vocab,
    beam: BeamConfig | None = None,
    batch_size: int = 128,
    max_sentences: int | None = None,
    replace_unk: bool = False,
    dictionary: Mapping[str, str] | None = None,
    tokenizer=None,
    engine=None,
) -> dict[str, float]:
    """Tokenised BLEU of a split's translations: ``bleu``, and ``bleu_unk`` after unk replacement.

    ``tokenizer``: the target tokeniser of training; sentencepiece pieces are joined into words.
    """
    out = translate_split(
        model, split, tgt_vocab, beam, batch_size, max_sentences, replace_unk, dictionary,
        engine=engine,
    )  # fmt: skip
    refs = bleu_lines(split.tgt_tokens[: len(out.words)], tokenizer)
    scores = {"bleu": corpus_bleu_tok(bleu_lines(out.words, tokenizer), refs)}
    if replace_unk:
        scores["bleu_unk"] = corpus_bleu_tok(bleu_lines(out.replaced, tokenizer), refs)
    return scores
