"""What the command-line tools share: error handling, help pages, the decoding options, and
reading input and writing output files.

Every command runs through :func:`run_command`: a :class:`~luong_lit.errors.UserError` (bad
data, option, config or checkpoint) becomes one paragraph on standard error and exit status 2;
anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import logging
import os
import shlex
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from luong_lit.data.io import decode_lines, read_lines
from luong_lit.errors import UsageError, UserError
from luong_lit.translator.fields import add_flags
from luong_lit.translator.options import LoadOptions, SearchOptions
from luong_lit.validate import OptionError


def user_error_message(err: BaseException) -> str:
    """``error: ...`` as one paragraph (one line: a message never spans several); an option
    named by its flag (``--beam``)."""
    if isinstance(err, OptionError) and err.is_keyword:  # an API keyword: named as its flag
        err = err.flagged()
    return "error: " + " ".join(str(err).split())


def with_plugins(argv: list[str]) -> list[str]:
    """``argv`` without its ``--user-dir`` options, every installed plugin and those folders
    loaded (:mod:`luong_lit.plugins`): every command's first step."""
    from luong_lit.plugins import load_plugins, take_user_dirs

    argv, folders = take_user_dirs(list(argv))
    load_plugins(folders)
    return argv


def run_command(main: Callable[[], int | None]) -> int:
    """Run a command's body; a user error prints one paragraph and gives exit status 2."""
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s: %(message)s")
    try:
        return int(main() or 0)
    except UserError as err:
        print(user_error_message(err), file=sys.stderr)
        return 2


#: set on an error of the task function itself (a bug in a job): it keeps its traceback
JOB_ERROR = "luong_lit_job_error"


def job_error(err: BaseException) -> None:
    """Mark ``err`` as raised by a job (:func:`hydra_errors` lets it through)."""
    setattr(err, JOB_ERROR, True)


@contextlib.contextmanager
def hydra_errors(overrides: Sequence[str]) -> Iterator[None]:
    """Run a Hydra app: what Hydra raises while it composes the config or launches the jobs (a
    bad override, a launcher that cannot start, for one run or a ``-m`` sweep) is one line and
    exit status 2 (:func:`luong_lit.config.hydra_error`); a job's own error (:func:`job_error`)
    goes on. ``HYDRA_FULL_ERROR=1``: Hydra's own report, with the full traceback."""
    from luong_lit.config import hydra_error

    if os.environ.get("HYDRA_FULL_ERROR") == "1":
        yield
        return
    os.environ["HYDRA_FULL_ERROR"] = "1"  # Hydra raises its errors instead of printing them
    try:
        yield
    except Exception as err:  # noqa: BLE001 - Hydra's errors are said in one line
        if getattr(err, JOB_ERROR, False):
            raise
        print(user_error_message(hydra_error(err, overrides)), file=sys.stderr)
        sys.exit(2)
    finally:
        os.environ.pop("HYDRA_FULL_ERROR", None)


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """The description as written, and every option's default after its help line."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if "%(default)" in text or action.default in (None, False, argparse.SUPPRESS):
            return text
        if action.option_strings or action.nargs in ("?", "*"):
            return f"{text} (default: %(default)s)"
        return text


def parser(prog: str, doc: str) -> argparse.ArgumentParser:
    """A command's parser: its module docstring as the description, defaults shown."""
    return argparse.ArgumentParser(
        prog=f"python -m luong_lit {prog}", description=doc.strip(), formatter_class=HelpFormatter
    )


def add_decoding_args(ap: argparse.ArgumentParser, checkpoints: bool = True) -> None:
    """Options shared by ``translate``, ``evaluate`` and ``serve``: the search's and the load's
    (:class:`SearchOptions`' and :class:`LoadOptions`' fields,
    :func:`~.translator.fields.add_flags`), and the process's threads."""
    if checkpoints:
        ap.add_argument("checkpoints", nargs="+", help="one checkpoint, or several for an ensemble")
    add_flags(ap, SearchOptions, "search")
    add_flags(ap, LoadOptions, "load")
    ap.add_argument(
        "--threads", type=int, default=None, help="torch threads (unset: torch's choice)"
    )


def add_sampling_args(ap: argparse.ArgumentParser) -> None:
    """Sampling instead of search (``translate``, ``serve``; :class:`SearchOptions`' fields)."""
    add_flags(ap, SearchOptions, "sampling")


def add_n_best_arg(ap: argparse.ArgumentParser, help: str) -> None:
    """``--n-best`` with a command's own words for what its N hypotheses become."""
    add_flags(ap, SearchOptions, "n_best", helps={"n_best": help})


def add_input_args(ap: argparse.ArgumentParser, max_src_len: int | None) -> None:
    """How input text is read (``translate``, ``serve``: :class:`LoadOptions`' input fields),
    with the command's own longest source (None: no limit)."""
    unset = {"max_src_len": "sources longer than this many tokens are overlong (unset: no "
             "limit)"} if max_src_len is None else {}  # fmt: skip
    add_flags(ap, LoadOptions, "input", helps=unset, defaults={"max_src_len": max_src_len})


def _given(args: argparse.Namespace, kind) -> dict:
    names = {f.name for f in dataclasses.fields(kind)}
    return {k: v for k, v in vars(args).items() if k in names}


def load_options(args: argparse.Namespace) -> LoadOptions:
    """:class:`LoadOptions` from parsed arguments."""
    return LoadOptions(**_given(args, LoadOptions))


def search_options(args: argparse.Namespace) -> SearchOptions:
    """:class:`SearchOptions` from parsed arguments (``--n-best`` where the command has it)."""
    return SearchOptions(**_given(args, SearchOptions))


def read_input(path: str | None) -> tuple[list[str], str]:
    """The lines to translate (space-like characters read as spaces, other control characters
    named with their line: :func:`luong_lit.data.io.user_line`)."""
    if path in (None, "-"):
        return decode_lines(sys.stdin.buffer, "<stdin>", user=True), "<stdin>"
    return read_lines(path, allow_empty_file=True, user=True), path


def read_prefixes(path: str | None, text: str | None, n: int) -> list[str] | None:
    """``--prefix FILE``'s lines, one per input line, or ``--prefix-text``'s ``text`` for each
    of the ``n`` lines; None without either."""
    if text is not None:
        if path is not None:
            raise UsageError("give --prefix FILE (a line per input) or --prefix-text TEXT")
        return [text] * n
    if path is None:
        return None
    if not Path(path).is_file():
        raise UsageError(
            f"--prefix {path}: no such file; --prefix takes a file, a prefix a line "
            f"(the same text for every line: --prefix-text {shlex.quote(path)})"
        )
    lines = read_lines(path, allow_empty_file=True, user=True)
    if len(lines) != n:
        raise UsageError(f"--prefix {path} has {len(lines)} lines but the input has {n}")
    return lines


def check_output(path: str | None) -> None:
    """``-o FILE`` can be written: its folder exists (checked before any decoding)."""
    if path and not Path(path).parent.is_dir():
        raise UsageError(f"-o {path}: the folder {Path(path).parent} does not exist")


def write_output(path: str, text: str) -> None:
    try:
        Path(path).write_text(text, encoding="utf-8")
    except OSError as err:
        raise UsageError(f"-o {path}: cannot write it ({err.strerror or err})") from None


def check_threads(threads: int | None) -> None:
    if threads is not None and threads < 1:
        raise UsageError(f"--threads must be at least 1, got {threads}")
