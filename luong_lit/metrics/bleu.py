"""BLEU on tokenised text (multi-bleu.perl equivalent) via sacreBLEU."""
from __future__ import annotations

from typing import Sequence

from luong_lit.data.tokenize import AT_SEP


def rejoin_hyphens(line: str) -> str:
    """Undo ``tokenizer.perl -a``: ``a ##AT##-##AT## b`` → ``a-b`` (spec §13)."""
    return line.replace(f" {AT_SEP} ", "-")


def corpus_bleu_tok(hyps: Sequence[str], refs: Sequence[str], rejoin: bool = True) -> float:
    """Case-sensitive corpus BLEU of tokenised text, as multi-bleu.perl computes it.

    sacreBLEU with ``tokenize='none'`` splits on whitespace only, which is what
    multi-bleu.perl does on already tokenised input.
    """
    import sacrebleu

    if len(hyps) != len(refs):
        raise ValueError(f"{len(hyps)} hypotheses but {len(refs)} references")
    if rejoin:
        hyps, refs = [rejoin_hyphens(h) for h in hyps], [rejoin_hyphens(r) for r in refs]
    return float(sacrebleu.corpus_bleu(list(hyps), [list(refs)], tokenize="none", force=True).score)
