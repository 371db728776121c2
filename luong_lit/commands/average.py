"""Average the weights of several checkpoints of one model into a new checkpoint.

    python -m luong_lit average RUN/checkpoints/epochs/e07.ckpt e08.ckpt e09.ckpt -o RUN/avg.ckpt

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

from luong_lit.checkpoint import average_checkpoints
from luong_lit.cli import parser as make_parser
from luong_lit.cli import run_command


def parser() -> argparse.ArgumentParser:
    ap = make_parser("average", __doc__)
    ap.add_argument("checkpoints", nargs="+", help="checkpoints of one model, e.g. its last epochs")
    ap.add_argument("-o", "--output", required=True, help="where to write the averaged checkpoint")
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)

    def body() -> None:
        out = average_checkpoints(args.checkpoints, args.output)
        n = len(args.checkpoints)
        what = f"the mean of {n} checkpoints"
        if n == 1:
            what = "the weights of the one checkpoint given (nothing averaged)"
        print(f"wrote {out}: {what}")

    return run_command(body)


if __name__ == "__main__":
    sys.exit(main())
