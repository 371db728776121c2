"""The paper's exhibits drawn from our runs: Table 5's sample translations (:func:`table5`: the
best model against the base on sentences of the test set) and Figure 7 of the paper's arXiv
version (:func:`figure7`: the attention of global, local-m and local-p models on one sentence of
the RWTH De–En gold set, beside its gold alignment).

Table 5 reads the lines ``evaluate`` keeps beside its report (``eval_TEST.src``, ``.ref``,
``.hyp_unk``); Figure 7 loads each model (``luong_lit.load``) and reads its attention by forced
decoding of the gold sentence pair, each target word's row chosen as footnote 14 says.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np

from luong_lit.analysis.outputs import run_outputs
from luong_lit.errors import DataError


def _lines(run: Path, kind: str) -> list[str]:
    found = run_outputs(run, kind)
    if found is None:
        raise DataError(f"{run}: no evaluate report with its {kind} lines (evaluate --out RUN)")
    return found[0]


def _sentence_bleu(hyp: str, ref: str) -> float:
    import sacrebleu

    return sacrebleu.sentence_bleu(hyp, [ref], tokenize="none").score


def table5(
    best: Path, base: Path, n: int = 4, min_words: int = 12, names: tuple[str, str] | None = None
) -> str:
    """Table 5 in the paper's manner: test sentences of at least ``min_words`` source words,
    each with its reference, the best system's translation and the base system's (both after
    unknown-word replacement); the ``n`` where the best system gains most in sentence BLEU,
    then the one where it loses most (the paper shows only the first kind). ``names``: what to
    call the two systems in the header (default: their run folders)."""
    src, ref = _lines(best, "src"), _lines(best, "ref")
    ours, theirs = _lines(best, "hyp_unk"), _lines(base, "hyp_unk")
    long = [i for i, s in enumerate(src) if len(s.split()) >= min_words]
    gain = {i: _sentence_bleu(ours[i], ref[i]) - _sentence_bleu(theirs[i], ref[i]) for i in long}
    ranked = sorted(long, key=lambda i: -gain[i])
    picked = ranked[:n] + ranked[-1:]
    a, b = names or (best.name, base.name)
    lines = [f"| | {a} (best) against {b} (base) |", "|---|---|"]
    for i in picked:
        kind = "best gains" if gain[i] > 0 else "best loses"
        lines += [f"| src (test line {i + 1}) | {src[i]} |", f"| ref | {ref[i]} |"]
        lines += [f"| best | {ours[i]} |", f"| base | {theirs[i]} |"]
        lines += [f"| | sentence BLEU {gain[i]:+.1f} ({kind}) |"]
    return "\n".join(lines) + "\n"


def gold_matrix(gold: tuple[set, set], n_src: int, n_tgt: int) -> np.ndarray:
    """(n_tgt, n_src) picture of ``(sure, possible)`` links: 1 for sure, 0.5 for possible."""
    out = np.zeros((n_tgt, n_src))
    for i, j in gold[1]:
        if i < n_src and j < n_tgt:
            out[j, i] = 1.0 if (i, j) in gold[0] else 0.5
    return out


def rwth_sentence(translator, index: int | None, longest: int = 14) -> tuple[list, list, tuple]:
    """One RWTH pair in the model's direction and tokens, with its gold links: ``index``, or the
    pair of at most ``longest`` words a side with the fewest words unknown to the model."""
    from luong_lit.alignment.gold import model_tokens, rwth_files
    from luong_lit.data.io import read_lines
    from luong_lit.data.loading.model_data import model_recipe
    from luong_lit.data.sources.fetch import local_mirror
    from luong_lit.metrics.aer import read_talp

    files = rwth_files(local_mirror("Figure 7"), *translator.meta.data.direction)
    recipe, sv, tv = model_recipe(translator.meta), translator.src_vocab, translator.tgt_vocab
    src = [model_tokens(x, recipe, sv) for x in read_lines(files[0])]
    tgt = [model_tokens(x, recipe, tv) for x in read_lines(files[1])]
    gold = read_talp(files[2], flip=files[3])
    if index is None:
        fits = [i for i in range(len(src)) if 8 <= len(src[i]) <= longest >= len(tgt[i])]
        unknown = {
            i: sum(w not in sv.stoi for w in src[i]) + sum(w not in tv.stoi for w in tgt[i])
            for i in fits
        }
        index = min(unknown, key=lambda i: (unknown[i] / len(src[i]), i))
    return src[index], tgt[index], gold[index]


def figure7(models: Mapping[str, str | Path], path: str | Path, index: int | None = None) -> Path:
    """Figure 7: each model's attention (``label: checkpoint``) on one RWTH sentence pair (the
    first model's choice, :func:`rwth_sentence`), and the gold alignment, side by side."""
    from luong_lit.analysis.figures import heatmap_panels, save_attention
    from luong_lit.translator import load

    loaded = {label: load(ckpt, pretokenized=True) for label, ckpt in models.items()}
    src, tgt, gold = rwth_sentence(next(iter(loaded.values())), index)
    panels = []
    for label, tr in loaded.items():
        ids = tr.src_vocab.encode(src), tr.tgt_vocab.encode(tgt)
        panels += heatmap_panels({label: tr.inference.float_stepper}, *ids)
    panels.append(("gold (RWTH De–En)", gold_matrix(gold, len(src), len(tgt))))
    return save_attention(panels, src, tgt, path)
