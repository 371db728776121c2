"""What the command-line tools share: error handling and the decoding options.

Every command runs through :func:`run_command`: a :class:`~luong_lit.errors.UserError` (bad
data, option, config or checkpoint) becomes one paragraph on standard error and exit status 2;
anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import sys
from collections.abc import Callable

from luong_lit.decoding.beam import AUTHORS, BeamConfig, parse_length_penalty
from luong_lit.decoding.ensemble import COMBINE
from luong_lit.decoding.workers import check_workers
from luong_lit.errors import UsageError, UserError
from luong_lit.nn.fast.quantize import PARTS


def user_error_message(err: BaseException) -> str:
    """``error: ...`` as one paragraph (one line: a message never spans several)."""
    return "error: " + " ".join(str(err).split())


def run_command(main: Callable[[], int | None]) -> int:
    """Run a command's body; a user error prints one paragraph and gives exit status 2."""
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s: %(message)s")
    try:
        return int(main() or 0)
    except UserError as err:
        print(user_error_message(err), file=sys.stderr)
        return 2


def add_decoding_args(ap: argparse.ArgumentParser) -> None:
    """Options shared by ``translate`` and ``evaluate``."""
    ap.add_argument("checkpoints", nargs="+", help="one checkpoint, or several for an ensemble")
    ap.add_argument(
        "--beam", type=int, default=5, help="beam size; 1 = greedy decoding (default 5)"
    )
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument(
        "--max-len-ratio",
        type=float,
        default=None,
        help="max output length / source length (default 1.5, plus 5 words; "
        "--authors-decoder: 1.5 of S + 1)",
    )
    ap.add_argument(
        "--min-len-ratio",
        type=float,
        default=None,
        help="min output length / source length (default 0; --authors-decoder: 0.5 of S + 1)",
    )
    ap.add_argument(
        "--length-penalty",
        default=None,
        help="none (raw log-probabilities, the paper), avg, or a GNMT alpha such as 0.6",
    )
    ap.add_argument(
        "--authors-decoder",
        action="store_true",
        help="the authors' search: beam 12, collect 100 finished, highest raw score",
    )
    ap.add_argument(
        "--combine", default="logits", choices=COMBINE, help="ensemble rule (default: the authors')"
    )
    ap.add_argument(
        "--replace-unk", action="store_true", help="replace <unk> via attention (footnote 14)"
    )
    ap.add_argument(
        "--dict", help="'src tgt [prob]' dictionary for --replace-unk (else copy the source word)"
    )
    ap.add_argument("--align-convention", default="paper", choices=("paper", "predicted"))
    ap.add_argument("--device", default="cpu")
    ap.add_argument(
        "--threads", type=int, default=None, help="torch threads (default: torch's choice)"
    )
    ap.add_argument(
        "--workers",
        type=int,
        default=1,
        help="decode batches in N forked one-thread processes (CPU; up to one per core; default 1)",
    )
    ap.add_argument(
        "--int8",
        nargs="?",
        const="output",
        default=None,
        choices=PARTS,
        help="decode with int8 copies of the output layer (--int8, --int8 output) or of "
        "every decoder matrix product (--int8 all); CPU; faster, approximate",
    )


def beam_config(args) -> BeamConfig:
    """The search the options ask for; beam size 1 runs as greedy search, with the same bounds.

    ``--authors-decoder`` is :data:`~luong_lit.decoding.beam.AUTHORS` (beam 12, raw scores,
    the authors' length bounds); length ratios given on the command line still apply.
    """
    if args.beam < 1 or args.batch_size < 1:
        raise UsageError(
            f"--beam and --batch-size must be at least 1 (got {args.beam}, {args.batch_size})"
        )
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
        raise UsageError(
            f"--n-best {n_best} needs a beam of at least {n_best} (the beam is {cfg.beam_size})"
        )
    ratios = {
        k: v
        for k, v in (("max_len_ratio", args.max_len_ratio), ("min_len_ratio", args.min_len_ratio))
        if v is not None
    }
    cfg = dataclasses.replace(cfg, **ratios)
    if cfg.min_len_ratio < 0 or cfg.max_len_ratio < 0 or cfg.min_len_ratio > cfg.max_len_ratio:
        raise UsageError(
            f"--min-len-ratio {cfg.min_len_ratio} and --max-len-ratio {cfg.max_len_ratio} must be "
            "at least 0, the first no larger than the second"
        )
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
    if args.threads is not None and args.threads < 1:
        raise UsageError(f"--threads must be at least 1, got {args.threads}")
    for name in ("n_best", "max_src_len"):
        value = getattr(args, name, None)
        if value is not None and value < 1:
            raise UsageError(f"--{name.replace('_', '-')} must be at least 1, got {value}")


def check_beam_fits(beam: BeamConfig, tgt_vocab) -> None:
    """A beam cannot be wider than the target vocabulary."""
    if beam.beam_size > len(tgt_vocab):
        raise UsageError(
            f"beam size {beam.beam_size} is larger than the model's target vocabulary "
            f"({len(tgt_vocab)} words)"
        )
