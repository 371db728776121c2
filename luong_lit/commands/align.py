"""Word alignments by forced decoding, and AER against gold links (paper §5.4, Table 6).

    python -m luong_lit align CKPT [CKPT ...] --rwth [--baselines] [--out DIR]
    python -m luong_lit align A.ckpt B.ckpt --rwth --member-conventions paper,predicted
    python -m luong_lit align CKPT --src F --tgt F [--gold F.talp [--gold-flip]] [--out DIR]

``--rwth`` uses the RWTH De–En gold set (``$LUONG_LIT_DATA/rwth_deen_alignment``, or
``--rwth-dir``) in the model's direction: an En→De model reads ``deen.tgt`` (English) as its
source and ``deen.src`` (German) as its target, and the gold links are flipped to match.

Token matching: the gold text is already tokenised, and each gold token is one model token,
lowercased and escaped as the model's training text was where its vocabulary has that form (a
lowercased Multi30k model reads "Haus" as "haus", "'s" as "&apos;s"). Tokens outside the model's
vocabulary are read as ``<unk>`` but keep their position, so every gold link stays scorable; the
report gives the share of tokens that were ``<unk>``. Links are written in Pharaoh ``i-j``
format (0-based source-target, original source order). The report goes to ``align.json`` (with
the links in ``alignments.txt``) in ``--out``; the command prints where, and the AER in one line.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from luong_lit.alignment import align_report, member_conventions, rwth_files
from luong_lit.cli import parser as make_parser
from luong_lit.cli import run_command
from luong_lit.data.io import read_lines
from luong_lit.data.loading.options import DataOptions
from luong_lit.data.sources.fetch import mirror_dir
from luong_lit.decoding.unk import CONVENTIONS
from luong_lit.errors import ConfigError, DataError
from luong_lit.translator import Translator


def input_files(args, data: DataOptions) -> tuple[Path, Path, Path | None, bool]:
    """(source text, target text, gold links or None, flip) from the options; ``data``: the
    model's data config (its direction, as stated)."""
    if args.rwth:
        root = Path(args.rwth_dir) if args.rwth_dir else mirror_dir(None)
        return rwth_files(root, *data.direction)
    if not (args.src and args.tgt):
        raise DataError("give --rwth, or both --src and --tgt")
    return Path(args.src), Path(args.tgt), args.gold, args.gold_flip


def run(args) -> dict:
    members = None
    if args.member_conventions:
        if args.align_convention != "paper":
            raise ConfigError("give --align-convention or --member-conventions, not both")
        members = member_conventions(args.member_conventions, len(args.checkpoints))
    tr = Translator.load(args.checkpoints)
    src, tgt, gold, flip = input_files(args, tr.meta.data)
    extra = None
    if args.baselines and args.extra_src and args.extra_tgt:
        extra = tuple([x.split() for x in read_lines(p)] for p in (args.extra_src, args.extra_tgt))
    report = align_report(tr, src, tgt, gold, flip=flip, convention=args.align_convention,
                          members=members, baselines=args.baselines, extra=extra,
                          progress=not args.quiet)  # fmt: skip
    return {"checkpoints": [str(c) for c in args.checkpoints], **report}


def summary_line(report: dict) -> str:
    """The report in one line (the whole of it is in its JSON file)."""
    line = f"{report['sentences']} sentences, {report['convention']} convention"
    if "aer" in report:
        line += f": AER {report['aer']:.4f}"
        found = report.get("baselines") or {}
        line += "".join(f", {name} {aer:.4f}" for name, aer in found.items())
    return line + f" (tokens read as <unk>: {report['unk_token_share']:.1%})"


def parser() -> argparse.ArgumentParser:
    ap = make_parser("align", __doc__)
    ap.add_argument("checkpoints", nargs="+", help="one checkpoint, or several for an ensemble")
    ap.add_argument(
        "--rwth", action="store_true", help="the RWTH De-En gold set, in the model's direction"
    )
    ap.add_argument(
        "--rwth-dir", help="directory of deen.src/deen.tgt/deen.talp (default: $LUONG_LIT_DATA)"
    )
    ap.add_argument("--src", help="tokenised source sentences")
    ap.add_argument("--tgt", help="tokenised reference translations")
    ap.add_argument("--gold", help="gold links, talp format (1-based i-j sure, ipj possible)")
    ap.add_argument("--gold-flip", action="store_true", help="gold i indexes the target side")
    ap.add_argument(
        "--align-convention",
        default="paper",
        choices=CONVENTIONS,
        help="which links are written and give 'aer' (align.json scores both conventions, "
        "unless --member-conventions is given)",
    )
    ap.add_argument(
        "--member-conventions",
        metavar="CONV,...",
        help="read each checkpoint's attention under its own convention (paper or predicted, "
        "one per checkpoint) before the ensemble's rows are summed",
    )
    ap.add_argument(
        "--baselines", action="store_true", help="also score eflomal and a diagonal aligner"
    )
    ap.add_argument("--extra-src", help="more parallel text for the eflomal baseline (source side)")
    ap.add_argument("--extra-tgt", help="more parallel text for the eflomal baseline (target side)")
    ap.add_argument("--quiet", action="store_true", help="no progress bar")
    ap.add_argument(
        "--out",
        default=".",
        help="folder for alignments.txt and align.json, or alignments_ensemble.txt and "
        "align_ensemble.json for several checkpoints (default: this one; report reads a run's "
        "align.json from its folder: --out RUN)",
    )
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)

    def body() -> None:
        report = run(args)
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        suffix = "_ensemble" if len(args.checkpoints) > 1 else ""  # a member's own file stays
        links, summary = out / f"alignments{suffix}.txt", out / f"align{suffix}.json"
        links.write_text("".join(x + "\n" for x in report.pop("links")), encoding="utf-8")
        summary.write_text(json.dumps(report, indent=2), encoding="utf-8")
        print(f"wrote {links.resolve()}, {summary.resolve()}")
        print(summary_line(report))

    return run_command(body)


if __name__ == "__main__":
    sys.exit(main())
