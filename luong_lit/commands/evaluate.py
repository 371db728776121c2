"""Evaluate a checkpoint or an ensemble on a named test set, and write a report.

    python -m luong_lit evaluate CKPT [CKPT ...] --test test_2016_flickr [--beam 5] [--dict FILE]

Reports perplexity, BLEU before and after unknown-word replacement (tokenised BLEU as
multi-bleu.perl computes it, and detokenised sacreBLEU 13a), BLEU by source length (Figure 6)
and sample translations in the style of Table 5, as Markdown and JSON in the run directory.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from luong_lit.checkpoint import run_directory
from luong_lit.cli import add_decoding_args, check_threads, decode_options, run_command
from luong_lit.cli import parser as make_parser
from luong_lit.data.loading.model_data import load_split
from luong_lit.evaluation import bleu_scores, translate_split
from luong_lit.metrics.bleu import bleu_lines
from luong_lit.metrics.buckets import bleu_by_length, markdown_table, plot_bleu_by_length
from luong_lit.metrics.perplexity import perplexity, stepwise_perplexity
from luong_lit.metrics.unk_quality import replacement_quality
from luong_lit.runtime import configure_cpu
from luong_lit.translator import Translator


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


def evaluate(args) -> dict:
    tr = Translator.load(args.checkpoints, decode_options(args))
    model, engine, tgt_vocab = tr.model, tr.engine, tr.tgt_vocab
    test = load_split(tr.meta, args.test, tr.src_vocab, tgt_vocab)
    split = test.split
    nets = list(getattr(model, "members", [model]))
    report = {
        "test": args.test,
        "checkpoints": [str(p) for p in args.checkpoints],
        "ppl": [perplexity(n, split.examples(), batch_nll=engine.nll) for n in nets],
    }
    if len(nets) > 1:  # the ensemble's own distribution (its combine rule), through its steps
        report["ppl_ensemble"] = stepwise_perplexity(tr.float_stepper, split.examples())
    out = translate_split(
        model,
        split,
        tgt_vocab,
        tr.options.search(),
        args.batch_size,
        None,
        True,
        tr.dictionary,
        args.align_convention,
        engine=engine,
        stepper=tr.stepper,  # the translator's, quantised once under --int8
        progress=not args.quiet,
        workers=args.workers,
    )
    plain, replaced = out.words, out.replaced
    refs = bleu_lines(split.tgt_tokens, test.tokenizer)
    report["decoding"] = {
        "beam": args.beam,
        "authors_decoder": args.authors_decoder,
        "length_penalty": args.length_penalty,
        "combine": args.combine,
        "dictionary": args.dictionary,
        "engine": args.engine,
        "align_convention": args.align_convention,
        "int8": args.int8,
    }
    report["bleu"] = bleu_scores(plain, refs, test.lang, test.tokenizer, test.raw_refs)
    report["bleu_unk_replaced"] = bleu_scores(
        replaced, refs, test.lang, test.tokenizer, test.raw_refs
    )
    report["detok_references"] = "raw" if test.raw_refs else "detokenised tokenised references"
    report["compared"] = compared(tr.meta)
    report["unk_in_output"] = sum(w.count("<unk>") for w in plain)
    report["unk_replacement"] = {
        "by": "dictionary, else copy" if args.dictionary else "copy",
        **replacement_quality(plain, replaced, split.tgt_tokens, split.src_tokens),
    }
    report["length_buckets"] = bleu_by_length(
        bleu_lines(replaced, test.tokenizer), refs, [len(s) for s in split.src_tokens]
    )
    report["samples"] = samples(split, plain, replaced, args.samples)
    return report


def unk_quality_line(q: dict) -> str:
    if not q["unk"]:
        return "Unknown-word replacement: no `<unk>` to replace."
    return (
        f"Unknown-word replacement ({q['by']}): {q['in_reference']} of {q['unk']} replaced words "
        f"occur in the reference ({100 * q['precision']:.1f} %); at most {q['could']} "
        f"({100 * q['oracle']:.1f} %) could, from the sentence's source words."
    )


def compared(meta: dict) -> str:
    """What BLEU compares: lowercased text when the model's corpus is lowercased (both the
    output and the references are then), else the text as cased."""
    from luong_lit.data.loading.model_data import model_recipe

    lowercase = model_recipe(meta).lowercase
    return "lowercased text (the model's corpus is lowercased)" if lowercase else "cased text"


def markdown(report: dict) -> str:
    b, u = report["bleu"], report["bleu_unk_replaced"]
    ppl = ", ".join(f"{p:.2f}" for p in report["ppl"])
    if "ppl_ensemble" in report:
        ppl += f"; the ensemble: {report['ppl_ensemble']:.2f}"
    lines = [
        f"# Evaluation on {report['test']}",
        "",
        "Checkpoints: " + ", ".join(f"`{Path(c).name}`" for c in report["checkpoints"]),
        "",
        f"Perplexity: {ppl}",
        "",
        f"Decoding: {json.dumps(report['decoding'])}",
        "",
        f"| BLEU on {report.get('compared', 'cased text')} | before unk replacement | after |",
        "|---|---:|---:|",
        "| tokenised (multi-bleu.perl equivalent, ##AT## rejoined) "
        f"| {b['bleu_tok']:.2f} | {u['bleu_tok']:.2f} |",
        "| detokenised sacreBLEU 13a (mteval-v13a stand-in) "
        f"| {b['bleu_detok']:.2f} | {u['bleu_detok']:.2f} |",
        "",
        f"`<unk>` words in the output: {report['unk_in_output']}",
        "",
        unk_quality_line(report["unk_replacement"]),
        "",
        "## BLEU by source length (Figure 6), after unk replacement",
        "",
        markdown_table(report["length_buckets"]),
        "",
        "## Sample translations (Table 5 style)",
        "",
    ]
    for s in report["samples"]:
        lines += [
            f"- **src**: {s['src']}",
            f"  - **ref**: {s['ref']}",
            f"  - **best**: {s['best']}",
            f"  - **best, unk replaced**: {s['best_unk_replaced']}",
        ]
    return "\n".join(lines) + "\n"


def parser() -> argparse.ArgumentParser:
    ap = make_parser("evaluate", __doc__)
    add_decoding_args(ap)
    ap.add_argument(
        "--test",
        required=True,
        help="test set name, e.g. test_2016_flickr or newstest2014_filtered",
    )
    ap.add_argument(
        "--out", help="directory for the report (unset: the first checkpoint's run directory)"
    )
    ap.add_argument("--samples", type=int, default=5, help="sample translations in the report")
    ap.add_argument("--quiet", action="store_true", help="no progress bar")
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)

    def body() -> None:
        decode_options(args)  # bad options fail before the model and the test set are read
        check_threads(args.threads)
        configure_cpu(args.threads)
        report = evaluate(args)
        out = Path(args.out) if args.out else run_directory(args.checkpoints[0])
        stem = f"eval_{args.test}" + ("_ensemble" if len(args.checkpoints) > 1 else "")
        out.mkdir(parents=True, exist_ok=True)
        plot_bleu_by_length({stem: report["length_buckets"]}, out / f"{stem}_bleu_by_length.png")
        (out / f"{stem}.json").write_text(json.dumps(report, indent=2), encoding="utf-8")
        (out / f"{stem}.md").write_text(markdown(report), encoding="utf-8")
        print(markdown(report))
        written = ", ".join(
            str(out / f"{stem}{x}") for x in (".md", ".json", "_bleu_by_length.png")
        )
        print(f"wrote {written}")

    return run_command(body)


if __name__ == "__main__":
    sys.exit(main())
