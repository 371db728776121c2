"""Evaluate a checkpoint or an ensemble on its test sets (or a named one), and write a report.

    python -m luong_lit evaluate CKPT [CKPT ...] [--test test_2016_flickr] [--beam 5] [--out DIR]

Reports perplexity, BLEU before and after unknown-word replacement (tokenised BLEU as
multi-bleu.perl computes it, and detokenised sacreBLEU 13a), chrF, chrF++ and TER of the same
lines beside it (each score with its sacreBLEU signature), BLEU by source length (Figure 6)
and sample translations in the style of Table 5, as Markdown and JSON in the current folder
(or ``--out``; ``report`` reads a run's own reports from its folder: ``--out RUN``). Without
``--test``, every test set of the checkpoint's training config is evaluated.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from luong_lit.cli import (
    add_decoding_args,
    check_threads,
    load_options,
    run_command,
    search_options,
)
from luong_lit.cli import parser as make_parser
from luong_lit.data.loading.model_data import test_set_names
from luong_lit.errors import UsageError
from luong_lit.evaluation import evaluate, markdown, summary
from luong_lit.metrics.buckets import plot_bleu_by_length
from luong_lit.reports import Evaluation
from luong_lit.runtime import configure_cpu
from luong_lit.translator import Translator

#: the decoding options the report records
DECODING = ("beam", "authors_decoder", "length_penalty", "combine", "dictionary", "engine",
            "align_convention", "int8")  # fmt: skip


def parser() -> argparse.ArgumentParser:
    ap = make_parser("evaluate", __doc__)
    add_decoding_args(ap)
    ap.add_argument(
        "--test",
        action="append",
        help="test set name, e.g. test_2016_flickr or newstest2014_filtered (repeatable; unset: "
        "every test set of the checkpoint's training config)",
    )
    ap.add_argument("--out", default=".", help="folder for the reports (default: this one)")
    ap.add_argument("--samples", type=int, default=5, help="sample translations in the report")
    ap.add_argument("--quiet", action="store_true", help="no progress bar")
    return ap


def write(report: Evaluation, lines: dict[str, list[str]], out: Path, stem: str) -> list[Path]:
    """The report as JSON and Markdown, its Figure 6 plot and the lines BLEU read (the output
    before and after unk replacement, and the references: ``STEM.hyp``, ``STEM.hyp_unk``,
    ``STEM.ref``, one sentence a line, for paired significance tests) under ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    plot_bleu_by_length({stem: report.length_buckets or []}, out / f"{stem}_bleu_by_length.png")
    for kind, text in lines.items():
        (out / f"{stem}.{kind}").write_text("".join(x + "\n" for x in text), encoding="utf-8")
    report = replace(report, outputs={kind: f"{stem}.{kind}" for kind in lines})
    (out / f"{stem}.json").write_text(json.dumps(report.to_json(), indent=2), encoding="utf-8")
    (out / f"{stem}.md").write_text(markdown(report), encoding="utf-8")
    return [out / f"{stem}{x}" for x in (".md", ".json", "_bleu_by_length.png")]


def checkpoint_tests(tr: Translator) -> list[str]:
    """The test sets the checkpoint's training config named."""
    names = test_set_names(tr.meta)
    if not names:
        raise UsageError("the checkpoint's training config names no test set: give --test NAME")
    return names


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)

    def body() -> None:
        options, search = load_options(args), search_options(args)  # before any work
        check_threads(args.threads)
        configure_cpu(args.threads)
        tr = Translator.load(args.checkpoints, options, search)
        decoding = {k: getattr(args, k) for k in DECODING}
        for test in args.test or checkpoint_tests(tr):
            found, lines = evaluate(tr, test, decoding=decoding, n_samples=args.samples,
                                    progress=not args.quiet)  # fmt: skip
            report = replace(found, checkpoints=tuple(str(p) for p in args.checkpoints))
            stem = f"eval_{test}" + ("_ensemble" if len(args.checkpoints) > 1 else "")
            written = write(report, lines, Path(args.out), stem)
            print(summary(report))
            print(f"wrote {', '.join(str(p.resolve()) for p in written)}")

    return run_command(body)


if __name__ == "__main__":
    sys.exit(main())
