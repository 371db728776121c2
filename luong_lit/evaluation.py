"""A checkpoint (or an ensemble) evaluated on a named test set, as ``evaluate`` reports it.

Perplexity, BLEU before and after unknown-word replacement (tokenised BLEU as multi-bleu.perl
computes it, and detokenised sacreBLEU 13a) with chrF, chrF++ and TER of the same tokenised and
detokenised lines beside it, each score's sacreBLEU signature, how good the replacements were,
BLEU by source length (Figure 6) and sample translations in the style of Table 5; as a record
(written as the JSON report) and as Markdown. The translations come from the translator's
decoder, as every command's do.

The report is an :class:`~luong_lit.reports.Evaluation`; its JSON's ``beam`` and ``beam_unk``
hold the scores before and after replacement: ``bleu_tok``, ``bleu_detok``, ``chrf_tok``,
``chrf_detok``, ``chrfpp_tok``, ``chrfpp_detok`` (chrF++), ``ter_tok`` and ``ter_detok``;
``signatures`` holds sacreBLEU's signature of each. Reports written before these names were
one (``bleu``, ``bleu_unk_replaced``) read as the same record.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from luong_lit.data.loading.model_data import ModelMeta, load_split, model_recipe
from luong_lit.metrics.bleu import bleu_lines
from luong_lit.metrics.buckets import bleu_by_length, markdown_table
from luong_lit.metrics.chrf_ter import text_scores
from luong_lit.metrics.perplexity import perplexity, stepwise_perplexity
from luong_lit.metrics.signatures import score_signatures
from luong_lit.metrics.unk_quality import replacement_quality
from luong_lit.reports import Evaluation, Scores


def samples(split, plain, replaced, n: int) -> list[dict]:
    """Table 5 style: source, reference, and the output before and after unk replacement."""
    picked = [i for i, (a, b) in enumerate(zip(plain, replaced)) if a != b][:n]
    picked += [i for i in range(len(plain)) if i not in picked][: n - len(picked)]
    return [
        {
            "src": " ".join(split.src_tokens[i]),
            "ref": " ".join(split.tgt_tokens[i]),
            "best": " ".join(plain[i]),
            "best_unk_replaced": " ".join(replaced[i]),
        }
        for i in sorted(picked)
    ]


def compared(meta: ModelMeta) -> str:
    """What BLEU compares: lowercased text when the model's corpus is lowercased (both the
    output and the references are then), else the text as cased."""
    lowercase = model_recipe(meta).lowercase
    return "lowercased text (the model's corpus is lowercased)" if lowercase else "cased text"


def _perplexities(translator, split) -> dict[str, Any]:
    """Each member's perplexity; for an ensemble, its own distribution's too (its combine rule,
    through its steps)."""
    nets = list(translator.model.members)
    engine = translator.inference.engine
    out: dict[str, Any] = {
        "ppl": tuple(perplexity(n, split.examples(), batch_nll=engine.nll) for n in nets)
    }
    if len(nets) > 1:
        out["ppl_ensemble"] = stepwise_perplexity(
            translator.inference.float_stepper, split.examples()
        )
    return out


def evaluate(
    translator, test: str, *, decoding: dict, n_samples: int = 5, progress: bool = False
) -> tuple[Evaluation, dict[str, list[str]]]:
    """The report of ``translator`` on its corpus's test set ``test``, decoded with its default
    search and unk replacement (``decoding``: what the report says it decoded with), and the
    lines BLEU read (``hyp``, ``hyp_unk``, ``ref``, ``src``: written beside the report, for
    paired tests)."""
    tr, opts = translator, translator.defaults
    tr.readable_alignments()  # the report replaces unknown words: refused now, not after decoding
    loaded = load_split(tr.meta, test, tr.src_vocab, tr.tgt_vocab)
    split = loaded.split
    out = tr.inference.split(
        split, search=opts.search(), batch_size=tr.options.batch_size, replace_unk=True,
        dictionary=tr.dictionary, convention=tr.options.align_convention,
        workers=tr.options.workers, progress=progress,
    )  # fmt: skip
    plain, replaced = out.words, out.replaced
    refs = bleu_lines(split.tgt_tokens, loaded.tokenizer)
    bleu = {"lang": loaded.lang, "tokenizer": loaded.tokenizer, "raw_refs": loaded.raw_refs}
    beam = text_scores(plain, refs, **bleu)
    report = Evaluation(
        test=test, **_perplexities(tr, split), decoding=decoding,
        beam=Scores.from_json(beam), beam_unk=Scores.from_json(text_scores(replaced, refs, **bleu)),
        signatures=score_signatures(beam),
        detok_references="raw" if loaded.raw_refs else "detokenised tokenised references",
        compared=compared(tr.meta), unk_in_output=sum(w.count("<unk>") for w in plain),
        unk_replacement={
            "by": "dictionary, else copy" if tr.options.dictionary else "copy",
            **replacement_quality(plain, replaced, split.tgt_tokens, split.src_tokens),
        },
        length_buckets=bleu_by_length(
            bleu_lines(replaced, loaded.tokenizer), refs, [len(s) for s in split.src_tokens]
        ),
        samples=samples(split, plain, replaced, n_samples),
    )  # fmt: skip
    lines = {
        "hyp": bleu_lines(plain, loaded.tokenizer),
        "hyp_unk": bleu_lines(replaced, loaded.tokenizer),
        "ref": refs,
        "src": [" ".join(s) for s in split.src_tokens],
    }
    return report, lines


def unk_quality_line(q: dict) -> str:
    if not q["unk"]:
        return "Unknown-word replacement: no `<unk>` to replace."
    return (
        f"Unknown-word replacement ({q['by']}): {q['in_reference']} of {q['unk']} replaced words "
        f"occur in the reference ({100 * q['precision']:.1f} %); at most {q['could']} "
        f"({100 * q['oracle']:.1f} %) could, from the sentence's source words."
    )


#: the rows of the report's tables: (score, what it is)
BLEU_ROWS = (
    ("bleu_tok", "tokenised (multi-bleu.perl equivalent, ##AT## rejoined)"),
    ("bleu_detok", "detokenised sacreBLEU 13a (mteval-v13a stand-in)"),
)
OTHER_SCORES = (
    ("chrf_tok", "chrF, tokenised"),
    ("chrf_detok", "chrF, detokenised"),
    ("chrfpp_tok", "chrF++, tokenised"),
    ("chrfpp_detok", "chrF++, detokenised"),
    ("ter_tok", "TER (lower is better; case ignored), tokenised"),
    ("ter_detok", "TER (lower is better; case ignored), detokenised"),
)


def signature_lines(report: Evaluation) -> list[str]:
    """sacreBLEU's signature of each score, those of one signature on one line (Markdown)."""
    by_signature: dict[str, list[str]] = {}
    for key, found in report.signatures.items():
        by_signature.setdefault(found, []).append(f"`{key}`")
    if not by_signature:
        return []
    lines = ["", "sacreBLEU signatures:", ""]
    return lines + [f"- {', '.join(keys)}: `{found}`" for found, keys in by_signature.items()]


def _both(report: Evaluation) -> tuple[dict[str, float], dict[str, float]]:
    """The beam output's scores before and after unk replacement (a report with scores)."""
    if report.beam is None or report.beam_unk is None:
        raise ValueError(f"the report on {report.test} has no scores")
    return report.beam.to_json(), report.beam_unk.to_json()


def scores_tables(report: Evaluation) -> list[str]:
    """BLEU, then chrF, chrF++ and TER (where the report has them), before and after unk
    replacement, and each score's sacreBLEU signature: Markdown lines."""
    b, u = _both(report)
    compared = report.compared or "cased text"
    lines = [f"| BLEU on {compared} | before unk replacement | after |", "|---|---:|---:|"]
    lines += [f"| {label} | {b[key]:.2f} | {u[key]:.2f} |" for key, label in BLEU_ROWS]
    others = [(k, label) for k, label in OTHER_SCORES if k in b and k in u]
    if others:
        lines += ["", f"| chrF, chrF++ and TER on {compared} | before unk replacement | after |"]
        lines.append("|---|---:|---:|")
    lines += [f"| {label} | {b[key]:.2f} | {u[key]:.2f} |" for key, label in others]
    return lines + signature_lines(report)


def _ppl(report: Evaluation, ensemble: str) -> str:
    """The members' perplexities, and the ensemble's as ``ensemble`` formats it."""
    ppl = ", ".join(f"{p:.2f}" for p in report.ppl)
    return ppl if report.ppl_ensemble is None else ppl + ensemble.format(report.ppl_ensemble)


def summary(report: Evaluation) -> str:
    """The few lines ``evaluate`` prints of a report (the whole of it is in its files):
    perplexity, BLEU (tokenised and detokenised) and chrF before and after unk replacement."""
    b, u = _both(report)
    ppl = _ppl(report, " (the ensemble: {:.2f})")
    beam, on = report.beam_width, report.compared or "cased text"
    lines = [
        f"{report.test}: perplexity {ppl}; beam {beam}, on {on}",
        f"  BLEU {b['bleu_tok']:.2f} tokenised, {b['bleu_detok']:.2f} detokenised (sacreBLEU "
        f"13a); chrF {b.get('chrf_tok', float('nan')):.2f}",
        f"  after unk replacement: BLEU {u['bleu_tok']:.2f} tokenised, {u['bleu_detok']:.2f} "
        f"detokenised ({report.unk_in_output} <unk> in the output)",
    ]
    return "\n".join(lines)


def markdown(report: Evaluation) -> str:
    lines = [
        f"# Evaluation on {report.test}",
        "",
        "Checkpoints: " + ", ".join(f"`{Path(c).name}`" for c in report.checkpoints),
        "",
        f"Perplexity: {_ppl(report, '; the ensemble: {:.2f}')}",
        "",
        f"Decoding: {json.dumps(dict(report.decoding))}",
        "",
        *scores_tables(report),
        "",
        f"`<unk>` words in the output: {report.unk_in_output}",
        "",
        unk_quality_line(dict(report.unk_replacement or {})),
        "",
        "## BLEU by source length (Figure 6), after unk replacement",
        "",
        markdown_table(report.length_buckets or []),
        "",
        "## Sample translations (Table 5 style)",
        "",
    ]
    for s in report.samples:
        lines += [
            f"- **src**: {s['src']}",
            f"  - **ref**: {s['ref']}",
            f"  - **best**: {s['best']}",
            f"  - **best, unk replaced**: {s['best_unk_replaced']}",
        ]
    return "\n".join(lines) + "\n"
