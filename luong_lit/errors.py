"""The one base class of errors a user can fix: bad data, options, configs or checkpoints.

Every command turns a :class:`UserError` into a one-paragraph message on standard error and
exit status 2 (:func:`luong_lit.cli.run_command`); anything else is a bug and keeps its
traceback.
"""

from __future__ import annotations


class UserError(ValueError):
    """A problem in what the user gave: the message names the file, line or option."""


class DataError(UserError):
    """Bad input data: the message names the file and, where it can, the line."""


class ConfigError(UserError):
    """An invalid model or training configuration, with the options named."""


class CheckpointError(UserError):
    """A checkpoint that is missing, corrupt or not a luong_lit model."""


class UsageError(UserError):
    """A bad command-line option value."""


def find_cause(err: BaseException | None, match) -> BaseException | None:
    """The first error in ``err``'s chain (itself, then what it was raised from) for which
    ``match(error)`` holds, or None."""
    seen = set()
    while err is not None and id(err) not in seen:
        if match(err):
            return err
        seen.add(id(err))
        err = err.__cause__ or err.__context__
    return None


def find_user_error(err: BaseException | None) -> UserError | None:
    """The :class:`UserError` behind ``err`` (itself, or one it was raised from: Hydra wraps the
    errors of the constructors it calls), or None."""
    found = find_cause(err, lambda e: isinstance(e, UserError))
    return found if isinstance(found, UserError) else None
