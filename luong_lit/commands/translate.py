"""Translate text with one trained checkpoint or an ensemble.

    python -m luong_lit translate CKPT [CKPT ...] [-i INPUT] [-o OUTPUT] [--beam 5]
        [--replace-unk [--dict FILE]] [--n-best N] [--combine logits|log_probs|probs]

Input is read from a file or stdin, one sentence per line; output has exactly one line per
input line (an empty line for an empty input), or ``N`` lines per input line with
``--n-best N``. Text is tokenised as the model's training data was (pre-tokenised data:
whitespace; Moses: tokenised and detokenised again; sentencepiece: split into pieces by the
pieces model the checkpoint keeps, and joined again).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from luong_lit.cli import add_decoding_args, check_options, run_command
from luong_lit.data.io import decode_lines, read_lines
from luong_lit.errors import DataError
from luong_lit.runtime import configure_cpu
from luong_lit.translator import Translator


def read_input(path: str | None) -> tuple[list[str], str]:
    if path in (None, "-"):
        return decode_lines(sys.stdin.buffer, "<stdin>"), "<stdin>"
    return read_lines(path, allow_empty_file=True), path


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="python -m luong_lit translate", description=__doc__.split("\n")[0]
    )
    add_decoding_args(ap)
    ap.add_argument("-i", "--input", help="input file (default: stdin)")
    ap.add_argument("-o", "--output", help="output file (default: stdout)")
    ap.add_argument(
        "--n-best", type=int, default=1, help="write the N best as 'i ||| text ||| score'"
    )
    ap.add_argument(
        "--pretokenized", action="store_true", help="input is already tokenised; output stays so"
    )
    ap.add_argument("--max-src-len", type=int, default=None, help="longest source decoded as it is")
    ap.add_argument("--overlong", default="truncate", choices=("truncate", "skip", "keep"))
    ap.add_argument("--quiet", action="store_true", help="no progress bar")
    ap.add_argument(
        "--interactive",
        action="store_true",
        help="translate each line as soon as it is read (the default when stdin is a terminal)",
    )
    ap.add_argument(
        "--show-attention",
        action="store_true",
        help="after each translation, a line of output tokens with the source token each "
        "attended to most (token→source)",
    )
    return ap


def interactive(translator: Translator, args, stdin=None, stdout=None) -> None:
    """One line in, its translation out at once (and flushed), until the input ends."""
    stdin, stdout = stdin or sys.stdin.buffer, stdout or sys.stdout
    number = 0
    while True:
        raw = stdin.readline()
        if not raw:
            return
        number += 1
        try:
            (line,) = decode_lines([raw], "<stdin>", number)
        except DataError as err:  # one bad line is reported, and the session goes on
            print(f"error: {err}", file=sys.stderr, flush=True)
            continue
        out = translator([line]) if line.strip() else [""]
        stdout.write(out[0] + "\n")
        if args.show_attention and line.strip():
            stdout.write(translator.attention_lines()[0] + "\n")
        stdout.flush()


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)

    def body() -> None:
        check_options(args)  # bad options fail before any input is read
        configure_cpu(args.threads)
        translator = Translator(args)  # a bad checkpoint fails before any input is read
        from_terminal = args.input in (None, "-") and sys.stdin.isatty()
        if (args.interactive or from_terminal) and args.input in (None, "-") and not args.output:
            return interactive(translator, args)
        lines, _ = read_input(args.input)
        result = translator(lines, progress=not args.quiet) if lines else []
        if args.show_attention and args.n_best == 1 and lines:
            attention = translator.attention_lines()
            result = [x for pair in zip(result, attention) for x in pair]
        text = "".join(x + "\n" for x in result)
        if args.output:
            Path(args.output).write_text(text, encoding="utf-8")
        else:
            sys.stdout.write(text)

    return run_command(body)


if __name__ == "__main__":
    sys.exit(main())
