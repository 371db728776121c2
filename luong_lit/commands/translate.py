"""Translate text with one trained checkpoint or an ensemble.

    python -m luong_lit translate CKPT [CKPT ...] [-i INPUT] [-o OUTPUT] [--beam 5]
        [--replace-unk] [--dict FILE] [--n-best N] [--combine logits|log_probs|probs]
        [--sampling [--temperature T] [--top-k K] [--top-p P] [--seed S]]
        [--prefix FILE | --prefix-text TEXT]

Input is read from a file or stdin, a sentence a line; output has one line per input line
(empty for an empty one), or N with --n-best N (--sampling: N samples). Text is tokenised as
the model's training data was (whitespace, Moses, or the checkpoint's sentencepiece model) and
the output detokenised again. At a terminal each line is answered as it is entered.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from luong_lit.cli import (
    add_decoding_args,
    add_input_args,
    add_n_best_arg,
    add_sampling_args,
    check_output,
    check_threads,
    load_options,
    read_input,
    read_prefixes,
    run_command,
    search_options,
    write_output,
)
from luong_lit.cli import parser as make_parser
from luong_lit.data.io import decode_lines
from luong_lit.errors import DataError, UsageError
from luong_lit.runtime import configure_cpu
from luong_lit.translator import Output, Translator


def parser():
    ap = make_parser("translate", __doc__)
    add_decoding_args(ap)
    add_sampling_args(ap)
    add_input_args(ap, max_src_len=None)
    ap.add_argument("-i", "--input", help="input file (unset: standard input)")
    ap.add_argument("-o", "--output", help="output file (unset: standard output)")
    add_n_best_arg(ap, "write the N best as 'i ||| text ||| score' lines")
    ap.add_argument(
        "--prefix",
        metavar="FILE",
        help="a file of the text each translation begins with, a line per input line (an "
        "empty line: none); the search (or sampling) goes on from it, kept as it is",
    )
    ap.add_argument(
        "--prefix-text",
        metavar="TEXT",
        help="the text every translation begins with (--prefix: one a line)",
    )
    ap.add_argument("--quiet", action="store_true", help="no progress bar")
    ap.add_argument(
        "--interactive",
        action="store_true",
        help="translate each line as soon as it is read (the default when stdin is a terminal)",
    )
    ap.add_argument(
        "--show-attention",
        action="store_true",
        help="after each translation (with --n-best: after each input's list, for the best), a "
        "line of its words with the source word each attended to most (word→source); with -o "
        "these lines go to standard output and the file keeps the translations",
    )
    return ap


def render(outs: list[Output], args, start: int = 0) -> list[str]:
    """Output lines: each input's translation lines, and with --show-attention the attention
    line of its best translation after them."""
    lines = []
    for i, out in enumerate(outs):
        lines += out.lines(start + i, args.n_best)
        lines += [out.attention_line()] if args.show_attention else []
    return lines


def interactive(translator: Translator, args, stdin=None, stdout=None) -> None:
    """One line in, its translation out at once (and flushed), until the input ends."""
    stdin, stdout = stdin or sys.stdin.buffer, stdout or sys.stdout
    print("ready: type a sentence and Enter (Ctrl-D ends)", file=sys.stderr, flush=True)
    number = 0
    try:
        while True:
            raw = stdin.readline()
            if not raw:
                return
            number += 1
            try:
                (line,) = decode_lines([raw], "<stdin>", number, user=True)
            except DataError as err:  # one bad line is reported, and the session goes on
                print(f"error: {err}", file=sys.stderr, flush=True)
                continue
            outs = translator.run([line], attention=args.show_attention)
            stdout.write("".join(x + "\n" for x in render(outs, args, number - 1)))
            stdout.flush()
    except KeyboardInterrupt:  # Ctrl-C ends the session as Ctrl-D does
        stdout.write("\n")
        stdout.flush()


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)

    def body() -> None:
        options, search = load_options(args), search_options(args)  # before any input is read
        check_threads(args.threads)
        check_output(args.output)
        if (args.prefix or args.prefix_text) and args.interactive:
            raise UsageError("--prefix gives a line per input line: leave out --interactive")
        configure_cpu(args.threads)
        translator = Translator.load(args.checkpoints, options, search)  # a bad checkpoint, too
        from_terminal = args.input in (None, "-") and sys.stdin.isatty() and not args.prefix
        if (args.interactive or from_terminal) and args.input in (None, "-") and not args.output:
            return interactive(translator, args)
        lines, _ = read_input(args.input)
        prefix = read_prefixes(args.prefix, args.prefix_text, len(lines))
        outs = translator.run(
            lines, attention=args.show_attention, progress=not args.quiet, prefix=prefix
        )
        if args.output:  # the file keeps the translations; attention lines: standard output
            lines = [x for i, out in enumerate(outs) for x in out.lines(i, args.n_best)]
            write_output(args.output, "".join(x + "\n" for x in lines))
            shown = [out.attention_line() for out in outs] if args.show_attention else []
        else:
            shown = render(outs, args)
        sys.stdout.write("".join(x + "\n" for x in shown))

    return run_command(body)


if __name__ == "__main__":
    sys.exit(main())
