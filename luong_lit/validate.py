"""Option checks for constructors: each class checks its own arguments, once.

A bad value raises :class:`OptionError`, which names the option, its value and what it must be.
Where the object is built from a config group, the builder adds the group's path
(:meth:`OptionError.within`), so that ``Seq2Seq(hidden_size=-3)`` built from ``model.net``
reads ``model.net.hidden_size=-3 is out of range: it must be an integer >= 1``.
"""

from __future__ import annotations

import math
from typing import Any

from luong_lit.errors import ConfigError


class OptionError(ConfigError):
    """An option whose value is out of range (or not one of its choices): ``option=value`` and
    ``why``."""

    def __init__(self, option: str, value: Any, why: str) -> None:
        self.option, self.value, self.why = option, value, why
        super().__init__(f"{option}={value!r} {why}")

    def within(self, group: str) -> OptionError:
        """The same error, the option named by its path in ``group`` (``model.net``)."""
        return OptionError(f"{group}.{self.option}", self.value, self.why)


def _range(allowed: str) -> str:
    return f"is out of range: it must be {allowed}"


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def integer(option: str, value: Any, low: int = 1, nullable: bool = False) -> None:
    """An integer ``>= low`` (or None where ``nullable``)."""
    if nullable and value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        allowed = f"an integer >= {low}" + (", or null" if nullable else "")
        raise OptionError(option, value, _range(allowed))


def positive(option: str, value: Any, nullable: bool = False) -> None:
    """A number ``> 0`` (or None where ``nullable``)."""
    if nullable and value is None:
        return
    if not (_number(value) and value > 0):
        raise OptionError(option, value, _range("a number > 0" + (", or null" if nullable else "")))


def rate(option: str, value: Any) -> None:
    """A probability in ``[0, 1)`` (dropout, label smoothing)."""
    if not (_number(value) and 0 <= value < 1):
        raise OptionError(option, value, _range("a number in [0, 1)"))


def one_of(option: str, value: Any, allowed) -> None:
    """One of ``allowed``."""
    if value not in allowed:
        raise OptionError(option, value, f"is unknown; choose one of {', '.join(allowed)}")
