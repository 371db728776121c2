"""``python -m luong_lit <command> [args...]`` (or ``luong-lit <command>``): every command.

Commands: train and prepare (Hydra overrides), translate, serve, evaluate, score, align,
average, report, notebook, dictionary. ``python -m luong_lit <command> --help`` shows each
command's options; ``--version`` the kit's version. ``--user-dir DIR``, anywhere, and every
installed plugin register a user's own parts first (:mod:`luong_lit.plugins`).
"""

from __future__ import annotations

import difflib
import importlib
import sys

COMMANDS = {
    "train": "train a model (Hydra overrides, e.g. experiment=m30k_small attention=local_p)",
    "prepare": "prepare a training corpus once: tokenise, filter, build vocabularies, store ids",
    "translate": "translate text with a checkpoint or an ensemble",
    "serve": "an HTTP JSON translation server (pip install -e '.[serve]')",
    "evaluate": "perplexity, BLEU, BLEU by length and samples on a test set",
    "score": "the log-probability of given translations by forced decoding",
    "align": "word alignments by forced decoding, and AER",
    "average": "average the weights of several checkpoints of one model",
    "report": "runs beside the paper's tables",
    "notebook": "write the analysis notebook into a folder (figures and tables of its runs)",
    "dictionary": "a word dictionary for unknown-word replacement, from aligned text",
}


def usage() -> str:
    width = max(map(len, COMMANDS))
    lines = [f"  {name:<{width}}  {text}" for name, text in COMMANDS.items()]
    head = "usage: python -m luong_lit [--user-dir DIR] <command> [args...]\n" \
        "       python -m luong_lit --version\n"  # fmt: skip
    head += "\ncommands:\n"
    return head + "\n".join(lines) + "\n"


def unknown_command(name: str) -> str:
    """The error line of a command that is not one, with the nearest command if one is near."""
    near = difflib.get_close_matches(name, COMMANDS, n=1)
    hint = f"; did you mean {near[0]}?" if near else ""
    return f"error: unknown command {name!r}{hint}\n"


def parser_of(name: str):
    """The argument parser of command ``name`` (those that take Hydra overrides have none)."""
    return importlib.import_module(f"luong_lit.commands.{name}").parser()


def main(argv: list[str] | None = None) -> int:
    from luong_lit import first_signals

    if argv is None:  # a process of its own: a SIGTERM while it loads, noted for the run
        first_signals.take()
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] in (["-h"], ["--help"]):
        sys.stdout.write(usage())
        return 0
    if argv[:1] == ["--version"]:
        from luong_lit.resources import version

        sys.stdout.write(f"luong_lit {version()}\n")
        return 0
    if not argv:
        sys.stderr.write("error: name a command\n\n" + usage())
        return 2
    from luong_lit.cli import with_plugins

    try:
        argv = with_plugins(argv)
    except Exception as err:  # noqa: BLE001 - a user's plugin: one line, exit 2
        from luong_lit.cli import user_error_message

        sys.stderr.write(user_error_message(err) + "\n")
        return 2
    if not argv:
        sys.stderr.write("error: name a command\n\n" + usage())
        return 2
    name, rest = argv[0], argv[1:]
    if name not in COMMANDS:
        sys.stderr.write(unknown_command(name) + "\n" + usage())
        return 2
    module = importlib.import_module(f"luong_lit.commands.{name}")
    if name == "train":  # a Hydra app, which reads sys.argv itself
        module.run(rest)
        return 0
    return int(module.main(rest) or 0)


if __name__ == "__main__":
    sys.exit(main())
