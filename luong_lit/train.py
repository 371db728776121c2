"""``python -m luong_lit.train [overrides...]``: the same as ``python -m luong_lit train``."""

from luong_lit.commands.train import main

if __name__ == "__main__":
    main()
