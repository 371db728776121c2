"""``python -m luong_lit.train [overrides...]``: the same as ``python -m luong_lit train``."""

import sys

from luong_lit import first_signals

first_signals.take()  # before the libraries load: a rank signalled as it starts stops cleanly

from luong_lit.commands.train import run  # noqa: E402

if __name__ == "__main__":
    run(sys.argv[1:])
