"""Case-sensitive BLEU, two ways (docs/paper_notes.md §13).

* Tokenised BLEU: sacreBLEU with ``tokenize='none'`` on tokenised text is what
  multi-bleu.perl computes; ``##AT##-##AT##`` is rejoined first, as the authors did. This is
  the BLEU of the paper's Tables 1, 3 and 4.
* Detokenised BLEU: both sides are detokenised with the Moses detokenizer and scored by
  sacreBLEU's ``13a`` tokenisation, the modern stand-in for NIST ``mteval-v13a`` (Table 2).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

from luong_lit.data.text.tokenize import AT_SEP
from luong_lit.data.vocab import UNK

# What an output ``<unk>`` becomes before 13a scoring: one plain word, which references do not
# contain in practice. Left as ``<unk>``, 13a would split it into ``< unk >``: three wrong tokens.
UNK_DETOK = "UNK"


def rejoin_hyphens(line: str) -> str:
    """Undo ``tokenizer.perl -a``: ``a ##AT##-##AT## b`` → ``a-b`` (docs/paper_notes.md §13)."""
    return line.replace(f" {AT_SEP} ", "-")


def bleu_words(tokens: Sequence[str], tokenizer=None) -> list[str]:
    """The words BLEU counts in a token sequence: subword pieces (a tokeniser named
    ``sentencepiece``) are joined into words first; word tokens are kept as they are.

    Pieces are joined at their ``▁`` word marks, so an output ``<unk>`` piece stays inside
    its word, which then counts as one wrong word (sentencepiece's own decoder would write
    `` ⁇ `` and split the word in three).
    """
    if getattr(tokenizer, "name", None) == "sentencepiece":
        return "".join(tokens).replace("\u2581", " ").split()
    return list(tokens)


def bleu_lines(word_lists: Sequence[Sequence[str]], tokenizer=None) -> list[str]:
    """One line per token list, in the words BLEU counts (:func:`bleu_words`)."""
    return [" ".join(bleu_words(w, tokenizer)) for w in word_lists]


def check_lengths(hyps: Sequence[str], refs: Sequence[str]) -> None:
    """One reference a hypothesis, or a ValueError that says how many of each."""
    if len(hyps) != len(refs):
        raise ValueError(f"{len(hyps)} hypotheses but {len(refs)} references")


def corpus_bleu_tok_score(hyps: Sequence[str], refs: Sequence[str], rejoin: bool = True):
    """sacreBLEU's whole score object for tokenised text (n-gram precisions, brevity penalty,
    lengths), as :func:`corpus_bleu_tok` computes it."""
    import sacrebleu

    check_lengths(hyps, refs)
    if rejoin:
        hyps, refs = [rejoin_hyphens(h) for h in hyps], [rejoin_hyphens(r) for r in refs]
    return sacrebleu.corpus_bleu(list(hyps), [list(refs)], tokenize="none", force=True)


def corpus_bleu_tok(hyps: Sequence[str], refs: Sequence[str], rejoin: bool = True) -> float:
    """Case-sensitive corpus BLEU of tokenised text, as multi-bleu.perl computes it.

    sacreBLEU with ``tokenize='none'`` splits on whitespace only, which is what
    multi-bleu.perl does on already tokenised input.
    """
    return float(corpus_bleu_tok_score(hyps, refs, rejoin).score)


@lru_cache(maxsize=8)
def _detokenizer(lang: str):
    from sacremoses import MosesDetokenizer

    return MosesDetokenizer(lang=lang)


def detokenize(line: str, lang: str) -> str:
    """Moses detokenisation of one tokenised line (hyphens rejoined, entities unescaped)."""
    return _detokenizer(lang).detokenize(rejoin_hyphens(line).split(), unescape=True)


def corpus_bleu_detok(
    hyps: Sequence[str], refs: Sequence[str], lang: str, refs_detokenized: bool = False
) -> float:
    """sacreBLEU ``13a`` on detokenised text; ``refs`` may already be raw references.

    An output ``<unk>`` counts as one wrong word, as it does in tokenised BLEU.
    """
    import sacrebleu

    hyps, refs = detokenized(hyps, refs, lang, refs_detokenized)
    return float(sacrebleu.corpus_bleu(hyps, [refs], tokenize="13a").score)


def detokenized(
    hyps: Sequence[str], refs: Sequence[str], lang: str, refs_detokenized: bool = False
) -> tuple[list[str], list[str]]:
    """The lines :func:`corpus_bleu_detok` scores: hypotheses detokenised (an output ``<unk>``
    as :data:`UNK_DETOK`), and the references detokenised unless ``refs_detokenized``."""
    check_lengths(hyps, refs)
    hyps = [
        detokenize(" ".join(UNK_DETOK if w == UNK else w for w in h.split()), lang) for h in hyps
    ]
    return hyps, list(refs) if refs_detokenized else [detokenize(r, lang) for r in refs]
