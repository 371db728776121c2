"""``python -m luong_lit.train [overrides...]``: the same as ``python -m luong_lit train``."""

import sys

from luong_lit.commands.train import run

if __name__ == "__main__":
    run(sys.argv[1:])
