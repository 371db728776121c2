"""Average the weights of several checkpoints of one model into a new checkpoint.

    python -m luong_lit average RUN/checkpoints/epochs/e07.ckpt e08.ckpt e09.ckpt -o RUN/avg.ckpt
    python -m luong_lit average RUN --last 3          # its newest 3 epoch checkpoints: RUN/avg.ckpt

A run folder and ``--last N`` take the newest N of its epoch checkpoints
(``RUN/checkpoints/epochs/``: train with ``callbacks.epoch_checkpoints.keep_last=N``, fairseq's
``--keep-last-epochs``; ``--last`` is its ``average_checkpoints.py --num-epoch-checkpoints``).

The result holds the element-wise mean of every parameter and the first checkpoint's
model description and vocabularies, so ``translate``, ``evaluate`` and ``align`` load it
like any other checkpoint. It holds no optimizer state: it is for decoding, not for
resuming. All inputs must describe the same network and vocabularies (an ensemble of
different models is ``translate A.ckpt B.ckpt`` instead). Checkpoints are read with
``torch.load(weights_only=True)``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from luong_lit.checkpoint import average_checkpoints
from luong_lit.cli import parser as make_parser
from luong_lit.cli import run_command
from luong_lit.errors import UsageError


def parser() -> argparse.ArgumentParser:
    ap = make_parser("average", __doc__)
    ap.add_argument("checkpoints", nargs="+",
                    help="checkpoints of one model (e.g. its last epochs), or a run folder with "
                    "--last N")  # fmt: skip
    ap.add_argument(
        "--last",
        type=int,
        metavar="N",
        help="the newest N epoch checkpoints of the run folder given",
    )
    ap.add_argument("-o", "--output", help="where to write it (default with a run: RUN/avg.ckpt)")
    return ap


def newest_epochs(run: Path, n: int) -> list[Path]:
    """The newest ``n`` of ``run``'s epoch checkpoints (``checkpoints/epochs/eXX.ckpt``)."""
    found = sorted((run / "checkpoints" / "epochs").glob("e*.ckpt"))
    if len(found) < n:
        raise UsageError(f"--last {n}: {run} keeps {len(found)} epoch checkpoints "
                         f"(train with callbacks.epoch_checkpoints.keep_last={n})")  # fmt: skip
    return found[-n:]


def inputs(args) -> tuple[list[Path], Path]:
    """The checkpoints to average and where the mean goes."""
    given = [Path(p) for p in args.checkpoints]
    if args.last is None:
        if args.output is None:
            raise UsageError("give -o/--output, where the averaged checkpoint is written")
        return given, Path(args.output)
    if args.last < 1 or len(given) != 1 or not given[0].is_dir():
        raise UsageError("--last N takes one run folder and N >= 1: average RUN --last 3")
    return newest_epochs(given[0], args.last), Path(args.output or given[0] / "avg.ckpt")


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)

    def body() -> None:
        given, output = inputs(args)
        out = average_checkpoints(given, output)
        n = len(given)
        what = f"the mean of {n} checkpoints ({', '.join(p.name for p in given)})"
        if n == 1:
            what = "the weights of the one checkpoint given (nothing averaged)"
        print(f"wrote {out}: {what}")

    return run_command(body)


if __name__ == "__main__":
    sys.exit(main())
