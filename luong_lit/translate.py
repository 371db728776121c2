"""Translate text with one trained checkpoint or an ensemble.

    python -m luong_lit.translate CKPT [CKPT ...] [-i INPUT] [-o OUTPUT] [--beam 5]
        [--replace-unk [--dict FILE]] [--n-best N] [--combine logits|log_probs|probs]

Input is read from a file or stdin, one sentence per line; output has exactly one line per
input line (an empty line for an empty input), or ``N`` lines per input line with
``--n-best N``. Text is tokenised as the model's training data was (pre-tokenised data:
whitespace; Moses: tokenised and detokenised again; sentencepiece: split into pieces by the
pieces model the checkpoint keeps, and joined again).
"""
from __future__ import annotations

import argparse
import dataclasses
import logging
import sys
from pathlib import Path
from typing import Sequence

from luong_lit.checkpoint import CheckpointError, load_models, stored_tokenizers
from luong_lit.data.dictionary import load_dictionary
from luong_lit.data.io import DataError, decode_lines, read_lines
from luong_lit.data.tokenize import WhitespaceTokenizer, make_tokenizer
from luong_lit.decoding.beam import AUTHORS, BeamConfig, parse_length_penalty
from luong_lit.decoding.corpus import Translation, decode_corpus, output_words
from luong_lit.decoding.ensemble import COMBINE, EnsembleError
from luong_lit.decoding.workers import check_workers
from luong_lit.nn.quantize import PARTS, QuantizationUnavailable, quantize_for_decoding
from luong_lit.runtime import configure_cpu

log = logging.getLogger("luong_lit.translate")


class UsageError(ValueError):
    """A bad option value."""


def add_decoding_args(ap: argparse.ArgumentParser) -> None:
    """Options shared by ``translate`` and ``evaluate``."""
    ap.add_argument("checkpoints", nargs="+", help="one checkpoint, or several for an ensemble")
    ap.add_argument("--beam", type=int, default=5, help="beam size; 1 = greedy decoding (default 5)")
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--max-len-ratio", type=float, default=None,
                    help="max output length / source length (default 1.5, plus 5 words; "
                         "--authors-decoder: 1.5 of S + 1)")
    ap.add_argument("--min-len-ratio", type=float, default=None,
                    help="min output length / source length (default 0; --authors-decoder: 0.5 of S + 1)")
    ap.add_argument("--length-penalty", default=None,
                    help="none (raw log-probabilities, the paper), avg, or a GNMT alpha such as 0.6")
    ap.add_argument("--authors-decoder", action="store_true",
                    help="nmt.matlab's search: beam 12, collect 100 finished, highest raw score")
    ap.add_argument("--combine", default="logits", choices=COMBINE, help="ensemble rule (default: the authors')")
    ap.add_argument("--replace-unk", action="store_true", help="replace <unk> via attention (footnote 14)")
    ap.add_argument("--dict", help="'src tgt [prob]' dictionary for --replace-unk (else copy the source word)")
    ap.add_argument("--align-convention", default="paper", choices=("paper", "predicted"))
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's choice)")
    ap.add_argument("--workers", type=int, default=1,
                    help="decode batches in N forked one-thread processes (CPU; up to one per core; default 1)")
    ap.add_argument("--int8", nargs="?", const="output", default=None, choices=PARTS,
                    help="decode with int8 copies of the output layer (--int8, --int8 output) or of "
                         "every decoder matrix product (--int8 all); CPU; faster, approximate")


def load_for_decoding(args):
    """The checkpoint(s) of ``args``, on ``args.device``, with ``--int8`` applied."""
    model, src_vocab, tgt_vocab, metas = load_models(args.checkpoints, args.combine, args.device)
    model.to(args.device)
    if getattr(args, "int8", False):
        try:
            quantize_for_decoding(model, args.int8)
        except QuantizationUnavailable as err:
            raise UsageError(f"--int8: {err}") from None
    return model, src_vocab, tgt_vocab, metas


def beam_config(args) -> BeamConfig:
    """The search the options ask for; beam size 1 runs as greedy search, with the same length bounds.

    ``--authors-decoder`` is :data:`~luong_lit.decoding.beam.AUTHORS` (beam 12, raw scores,
    the authors' length bounds); length ratios given on the command line still apply.
    """
    if args.beam < 1 or args.batch_size < 1:
        raise UsageError(f"--beam and --batch-size must be at least 1 (got {args.beam}, {args.batch_size})")
    try:
        penalty = parse_length_penalty(args.length_penalty)
    except ValueError as e:
        raise UsageError(f"--length-penalty: {e}") from None
    n_best = getattr(args, "n_best", 1)
    if args.authors_decoder:
        if penalty is not None:
            raise UsageError("--authors-decoder ranks by raw score; leave out --length-penalty")
        cfg = dataclasses.replace(AUTHORS, n_best=n_best)
    else:
        cfg = BeamConfig(beam_size=args.beam, n_best=n_best, length_penalty=penalty)
    if n_best > cfg.beam_size:
        raise UsageError(f"--n-best {n_best} needs a beam of at least {n_best} (the beam is {cfg.beam_size})")
    ratios = {k: v for k, v in (("max_len_ratio", args.max_len_ratio), ("min_len_ratio", args.min_len_ratio))
              if v is not None}
    cfg = dataclasses.replace(cfg, **ratios)
    if cfg.min_len_ratio < 0 or cfg.max_len_ratio < 0 or cfg.min_len_ratio > cfg.max_len_ratio:
        raise UsageError(f"--min-len-ratio {cfg.min_len_ratio} and --max-len-ratio {cfg.max_len_ratio} must be "
                         "at least 0, the first no larger than the second")
    return cfg


def check_options(args) -> None:
    """Refuse bad decoding options (the search, ``--workers``) before any model or input is read."""
    beam_config(args)
    try:
        check_workers(args.workers)
    except ValueError as e:
        raise UsageError(str(e)) from None
    if args.workers > 1 and args.device != "cpu":
        raise UsageError(f"--workers above 1 decodes on the CPU only (got --device {args.device})")


def check_beam_fits(beam: BeamConfig, tgt_vocab) -> None:
    """A beam cannot be wider than the target vocabulary."""
    if beam.beam_size > len(tgt_vocab):
        raise UsageError(f"beam size {beam.beam_size} is larger than the model's target vocabulary "
                         f"({len(tgt_vocab)} words)")


def tokenizers(meta: dict, pretokenized: bool, src_vocab=None, tgt_vocab=None):
    """Source tokeniser and target detokeniser matching the model's training data.

    Sentencepiece models come from the checkpoint; for a checkpoint without them, they are
    rebuilt from the training data (or taken from the cache), which must still give the
    model's vocabularies.
    """
    data = meta.get("data") or {}
    kind, opts = data.get("tokenizer", "none"), dict(data.get("tokenizer_opts") or {})
    if pretokenized or kind == "none":
        return WhitespaceTokenizer(opts.get("lowercase", False)), WhitespaceTokenizer()
    if kind == "sentencepiece":
        from luong_lit.evaluate import datamodule_for

        stored = stored_tokenizers(meta)
        if stored is None:  # an older checkpoint: rebuild the pieces model
            dm = datamodule_for(meta, setup=False)
            dm.setup_test(src_vocab, tgt_vocab)
            stored = dm.tokenizers
        return stored["src"], stored["tgt"]
    try:
        return (make_tokenizer(kind, data.get("src_lang", "en"), **opts),
                make_tokenizer(kind, data.get("tgt_lang", "de"), **opts))
    except (TypeError, ValueError) as err:
        raise CheckpointError(f"the checkpoint's tokeniser description is damaged ({err})") from None


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


def translate_lines(lines: Sequence[str], args, progress: bool = True) -> list[str]:
    model, src_vocab, tgt_vocab, metas = load_for_decoding(args)
    tok_src, detok_tgt = tokenizers(metas[0], args.pretokenized, src_vocab, tgt_vocab)
    src_words = limit_length([tok_src.tokenize(x) for x in lines], args.max_src_len, args.overlong)
    beam = beam_config(args)
    check_beam_fits(beam, tgt_vocab)
    dictionary = load_dictionary(args.dict) if args.dict else None
    out = decode_corpus(model, [src_vocab.encode(s) for s in src_words], args.batch_size, beam,
                        keep_attention=args.replace_unk, progress=progress, workers=args.workers)
    content = model.content_based if args.replace_unk else True  # an ensemble may mix conventions
    unk_args = (content, dictionary, args.align_convention)
    if args.n_best > 1:
        return _n_best_lines(out, tgt_vocab, detok_tgt, args.n_best, src_words if args.replace_unk else None, *unk_args)
    words = output_words(out, tgt_vocab, src_words if args.replace_unk else None, *unk_args)
    return [detok_tgt.detokenize(w) if w else "" for w in words]


def _n_best_lines(out, tgt_vocab, detok, n: int, src_words=None, *unk_args) -> list[str]:
    """``i ||| translation ||| score`` lines, as Moses and fairseq write n-best lists.

    Every input gets exactly ``n`` lines; an empty input gets ``n`` empty translations with
    score 0. With ``src_words``, each hypothesis has its ``<unk>`` words replaced through its
    own attention (``unk_args``: as :func:`output_words` takes them).
    """
    lines = []
    for i, tr in enumerate(out):
        hyps = [Translation(h.tokens, h.attention, h.score) for h in tr.n_best[:n]]
        words = output_words(hyps, tgt_vocab, None if src_words is None else [src_words[i]] * len(hyps), *unk_args)
        for w, h in zip(words, hyps):
            lines.append(f"{i} ||| {detok.detokenize(w) if w else ''} ||| {h.score:.4f}")
        lines += [f"{i} |||  ||| 0.0000"] * (n - len(hyps))
    return lines


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m luong_lit.translate", description=__doc__.split("\n")[0])
    add_decoding_args(ap)
    ap.add_argument("-i", "--input", help="input file (default: stdin)")
    ap.add_argument("-o", "--output", help="output file (default: stdout)")
    ap.add_argument("--n-best", type=int, default=1, help="write the N best as 'i ||| text ||| score'")
    ap.add_argument("--pretokenized", action="store_true", help="input is already tokenised; output stays so")
    ap.add_argument("--max-src-len", type=int, default=None, help="longest source decoded as it is")
    ap.add_argument("--overlong", default="truncate", choices=("truncate", "skip", "keep"))
    ap.add_argument("--quiet", action="store_true", help="no progress bar")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s: %(message)s")
    configure_cpu(args.threads)
    try:
        check_options(args)  # bad options fail before any input is read
        lines, _ = read_input(args.input)
        result = translate_lines(lines, args, progress=not args.quiet) if lines else []
    except (CheckpointError, DataError, EnsembleError, UsageError) as err:
        print(f"error: {err}", file=sys.stderr)
        sys.exit(2)
    text = "".join(x + "\n" for x in result)
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
