"""Build a word dictionary for unknown-word replacement by aligning tokenised parallel text.

    python -m luong_lit dictionary --src train.en --tgt train.de [--links F] [--min-count 10] \
        --out dict.txt

Links come from eflomal (``pip install eflomal``) unless ``--links`` gives Pharaoh ``i-j``
lines; see :mod:`luong_lit.data.text.dictionary`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from luong_lit.alignment.eflomal import eflomal_links
from luong_lit.cli import parser as make_parser
from luong_lit.cli import run_command
from luong_lit.data.io import read_lines
from luong_lit.data.text.dictionary import dictionary_from_links, parse_links, write_dictionary
from luong_lit.errors import DataError


def parser() -> argparse.ArgumentParser:
    ap = make_parser("dictionary", __doc__)
    ap.add_argument("--src", required=True, help="tokenised source file")
    ap.add_argument("--tgt", required=True, help="tokenised target file")
    ap.add_argument("--links", help="Pharaoh i-j links per line (unset: run eflomal)")
    ap.add_argument(
        "--min-count", type=int, default=10, help="keep pairs linked at least this often"
    )
    ap.add_argument("--out", required=True, help="where to write the 'src tgt prob' lines")
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)

    def body() -> None:
        src = [x.split() for x in read_lines(args.src)]
        tgt = [x.split() for x in read_lines(args.tgt)]
        if len(src) != len(tgt):
            raise DataError(f"{args.src} has {len(src)} lines but {args.tgt} has {len(tgt)}")
        if args.links:
            links = [
                parse_links(x, f"{args.links}:{n}") for n, x in enumerate(read_lines(args.links), 1)
            ]
        else:
            links = eflomal_links(src, tgt)
        d = dictionary_from_links(src, tgt, links, args.min_count)
        write_dictionary(d, args.out)
        print(f"{len(d)} entries written to {args.out}")

    return run_command(body)


if __name__ == "__main__":
    sys.exit(main())
