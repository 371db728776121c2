"""Score given translations: each pair's log-probability under a checkpoint or an ensemble.

    python -m luong_lit score CKPT [CKPT ...] --src test.en --tgt hyps.de [--tokens] [-o FILE]
    paste test.en hyps.de | python -m luong_lit score CKPT

Each pair is force-decoded (the model reads the given translation word by word) and one line
is written per pair: log p(tgt | src), the sum of the natural-log probabilities of the target's
tokens and </s>, as luong_lit.load(CKPT).score(src, tgt) gives it. --tokens adds two
tab-separated columns: the target's tokens as the model reads them (then </s>) and the
log-probability of each. Both sides are read as translate reads text (tokenised as the model's
training data was; --pretokenized: as they are). Without --src and --tgt, standard input holds
source<TAB>target lines. An ensemble scores with its combined scores (--combine).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from luong_lit.cli import check_output, check_threads, load_options, run_command, write_output
from luong_lit.cli import parser as make_parser
from luong_lit.data.io import decode_lines, read_lines, user_line
from luong_lit.errors import UsageError
from luong_lit.runtime import configure_cpu
from luong_lit.translator import LoadOptions, TokenScores, Translator
from luong_lit.translator.fields import add_flags


def parser() -> argparse.ArgumentParser:
    ap = make_parser("score", __doc__)
    ap.add_argument("checkpoints", nargs="+", help="one checkpoint, or several for an ensemble")
    ap.add_argument("--src", help="source sentences, one a line (unset: tab-separated stdin)")
    ap.add_argument("--tgt", help="their translations, one a line (with --src)")
    ap.add_argument(
        "--tokens", action="store_true", help="also each target token and its log-probability"
    )
    ap.add_argument("-o", "--output", help="output file (unset: standard output)")
    add_flags(ap, LoadOptions, "input", only=("pretokenized",),
              helps={"pretokenized": "the text is already tokenised"})  # fmt: skip
    add_flags(ap, LoadOptions, "load", only=("engine", "device", "combine", "batch_size"), helps={
        "engine": "how the model is computed (the same scores): fast or reference",
        "device": "torch device to score on, e.g. cuda",
        "batch_size": "sentences scored together",
    })  # fmt: skip
    ap.add_argument(
        "--threads", type=int, default=None, help="torch threads (unset: torch's choice)"
    )
    return ap


def read_pairs(src: str | None, tgt: str | None) -> tuple[list[str], list[str]]:
    """Sources and targets from ``--src``/``--tgt``, or ``source<TAB>target`` lines on stdin."""
    if (src is None) != (tgt is None):
        raise UsageError("give both --src and --tgt, or neither (tab-separated standard input)")
    if src is not None and tgt is not None:  # both or neither, as checked above
        srcs = read_lines(src, allow_empty_file=True, user=True)
        tgts = read_lines(tgt, allow_empty_file=True, user=True)
        if len(srcs) != len(tgts):
            raise UsageError(f"--src {src} has {len(srcs)} lines but --tgt {tgt} has {len(tgts)}")
        return srcs, tgts
    return tab_separated(decode_lines(sys.stdin.buffer, "<stdin>"), "<stdin>")


def tab_separated(lines: Sequence[str], name: str) -> tuple[list[str], list[str]]:
    """``source<TAB>target`` lines split in two, each side read as text to translate."""
    srcs, tgts = [], []
    for n, line in enumerate(lines, start=1):
        fields = line.split("\t")
        if len(fields) != 2:
            raise UsageError(
                f"{name}:{n}: expected source<TAB>target, got {len(fields)} tab-separated fields"
            )
        srcs.append(user_line(fields[0], f"{name}:{n}"))
        tgts.append(user_line(fields[1], f"{name}:{n}"))
    return srcs, tgts


def check_sources(srcs: Sequence[str], where: str) -> None:
    """Every source has a word to read (an empty one cannot be scored)."""
    for n, line in enumerate(srcs, start=1):
        if not line.strip():
            raise UsageError(f"{where}:{n}: an empty source; every source needs a word")


def score_line(scored: TokenScores, tokens: bool) -> str:
    """A pair's line: its log-probability, and with ``tokens`` its tokens and theirs."""
    line = f"{scored.score:.4f}"
    if tokens:
        logprobs = " ".join(f"{x:.4f}" for x in scored.logprobs)
        line += "\t" + " ".join(scored.tokens) + "\t" + logprobs
    return line


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)

    def body() -> None:
        options = load_options(args)
        check_threads(args.threads)
        check_output(args.output)
        srcs, tgts = read_pairs(args.src, args.tgt)
        check_sources(srcs, args.src or "<stdin>")
        configure_cpu(args.threads)
        translator = Translator.load(args.checkpoints, options)
        step, lines = 16 * translator.batch_size, []
        for start in range(0, len(srcs), step):  # a long file a part at a time
            part = slice(start, start + step)
            scored = translator.token_scores(srcs[part], tgts[part]) if srcs[part] else []
            lines += [score_line(x, args.tokens) for x in scored]
        text = "".join(x + "\n" for x in lines)
        if args.output:
            write_output(args.output, text)
        else:
            sys.stdout.write(text)

    return run_command(body)


if __name__ == "__main__":
    sys.exit(main())
