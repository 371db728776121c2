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
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from luong_lit.checkpoint import load_models
from luong_lit.cli import (
    add_decoding_args,
    beam_config,
    check_beam_fits,
    check_options,
    run_command,
)
from luong_lit.data.dictionary import load_dictionary
from luong_lit.data.io import decode_lines, read_lines
from luong_lit.data.model_data import tokenizers
from luong_lit.decoding.corpus import Translation, decode_corpus, output_words
from luong_lit.runtime import configure_cpu

log = logging.getLogger("luong_lit.translate")


def read_input(path: str | None) -> tuple[list[str], str]:
    if path in (None, "-"):
        return decode_lines(sys.stdin.buffer, "<stdin>"), "<stdin>"
    return read_lines(path, allow_empty_file=True), path


def limit_length(src: list[list[str]], max_len: int | None, mode: str) -> list[list[str]]:
    """Overlong sources are truncated (``truncate``), left out with an empty output (``skip``),
    or decoded whole (``keep``)."""
    if not max_len or mode == "keep":
        return src
    n_long = sum(len(s) > max_len for s in src)
    if n_long:
        log.warning("%d input lines are longer than %d tokens (%s)", n_long, max_len, mode)
    if mode == "truncate":
        return [s[:max_len] for s in src]
    return [s if len(s) <= max_len else [] for s in src]


class Translator:
    """A loaded model (or ensemble) with its tokenisers and search: lines in, lines out."""

    def __init__(self, args) -> None:
        self.args = args
        self.model, self.src_vocab, self.tgt_vocab, metas = load_models(
            args.checkpoints, args.combine, args.device
        )
        self.tok_src, self.detok_tgt = tokenizers(
            metas[0], args.pretokenized, self.src_vocab, self.tgt_vocab
        )
        self.beam = beam_config(args)
        check_beam_fits(self.beam, self.tgt_vocab)
        self.dictionary = load_dictionary(args.dict) if args.dict else None

    def __call__(self, lines: Sequence[str], progress: bool = False) -> list[str]:
        args = self.args
        src_words = limit_length(
            [self.tok_src.tokenize(x) for x in lines], args.max_src_len, args.overlong
        )
        out = decode_corpus(
            self.model,
            [self.src_vocab.encode(s) for s in src_words],
            args.batch_size,
            self.beam,
            keep_attention=args.replace_unk,
            progress=progress,
            workers=args.workers,
            int8=args.int8,
        )
        content = self.model.content_based if args.replace_unk else True  # members may differ
        unk_args = (content, self.dictionary, args.align_convention)
        replace_src = src_words if args.replace_unk else None
        if args.n_best > 1:
            return n_best_lines(
                out, self.tgt_vocab, self.detok_tgt, args.n_best, replace_src, *unk_args
            )
        words = output_words(out, self.tgt_vocab, replace_src, *unk_args)
        return [self.detok_tgt.detokenize(w) if w else "" for w in words]


def translate_lines(lines: Sequence[str], args, progress: bool = True) -> list[str]:
    """Translate ``lines`` with the model(s) of ``args``."""
    return Translator(args)(lines, progress)


def n_best_lines(out, tgt_vocab, detok, n: int, src_words=None, *unk_args) -> list[str]:
    """``i ||| translation ||| score`` lines, as Moses and fairseq write n-best lists.

    Every input gets exactly ``n`` lines; an empty input gets ``n`` empty translations with
    score 0. With ``src_words``, each hypothesis has its ``<unk>`` words replaced through its
    own attention (``unk_args``: as :func:`output_words` takes them).
    """
    lines = []
    for i, tr in enumerate(out):
        hyps = [Translation(h.tokens, h.attention, h.score) for h in tr.n_best[:n]]
        srcs = None if src_words is None else [src_words[i]] * len(hyps)
        words = output_words(hyps, tgt_vocab, srcs, *unk_args)
        for w, h in zip(words, hyps):
            lines.append(f"{i} ||| {detok.detokenize(w) if w else ''} ||| {h.score:.4f}")
        lines += [f"{i} |||  ||| 0.0000"] * (n - len(hyps))
    return lines


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
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)

    def body() -> None:
        check_options(args)  # bad options fail before any input is read
        configure_cpu(args.threads)
        translator = Translator(args)  # a bad checkpoint fails before any input is read
        lines, _ = read_input(args.input)
        result = translator(lines, progress=not args.quiet) if lines else []
        text = "".join(x + "\n" for x in result)
        if args.output:
            Path(args.output).write_text(text, encoding="utf-8")
        else:
            sys.stdout.write(text)

    return run_command(body)


if __name__ == "__main__":
    sys.exit(main())
