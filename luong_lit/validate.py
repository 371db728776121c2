"""Option checks for constructors: each class checks its own arguments, once.

A bad value raises :class:`OptionError`, which names the option, its value and what it must be.
Where the object is built from a config group, the builder adds the group's path
(:meth:`OptionError.within`), so that ``Seq2Seq(hidden_size=-3)`` built from ``model.net``
reads ``model.net.hidden_size=-3 is out of range: it must be an integer >= 1``.

A constructor with many options takes them as keywords and groups them into option objects
(frozen dataclasses whose fields are the config keys): :func:`takes_options` shows every field
in its signature, :func:`split_options` builds the groups and refuses a key none of them has.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import fields
from typing import Any

from luong_lit.errors import ConfigError


class OptionError(ConfigError):
    """An option whose value is out of range (or not one of its choices): ``option=value`` and
    ``why``."""

    def __init__(self, option: str, value: Any, why: str) -> None:
        self.option, self.value, self.why = option, value, why
        super().__init__(self._message())

    def _message(self) -> str:
        return f"{self.option}={self.value!r} {self.why}"

    def within(self, group: str) -> OptionError:
        """The same error, the option named by its path in ``group`` (``model.net``)."""
        return type(self)(f"{group}.{self.option}", self.value, self.why)


class OptionConflict(OptionError):
    """Options that each hold a valid value, but not together: ``template`` names each of
    ``options`` as ``{option}``, so that :meth:`within` can put the group's path before every
    one (``model.net.tie_output=true ... model.net.embed_size``)."""

    def __init__(self, template: str, *options: str, group: str = "") -> None:
        self.template, self.options, self.group = template, options, group
        prefix = f"{group}." if group else ""
        ConfigError.__init__(self, template.format(**{o: prefix + o for o in options}))

    def within(self, group: str) -> OptionConflict:
        inner = f"{group}.{self.group}" if self.group else group
        return type(self)(self.template, *self.options, group=inner)


class UnknownOption(OptionError):
    """A keyword its constructor does not take: ``option`` and the options it does take."""

    def _message(self) -> str:
        return f"{self.option} {self.why}"


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


def non_negative(option: str, value: Any) -> None:
    """A number ``>= 0``."""
    if not (_number(value) and value >= 0):
        raise OptionError(option, value, _range("a number >= 0"))


def fraction(option: str, value: Any) -> None:
    """A number in ``(0, 1)`` (a factor that shrinks something)."""
    if not (_number(value) and 0 < value < 1):
        raise OptionError(option, value, _range("a number in (0, 1)"))


def rate(option: str, value: Any) -> None:
    """A probability in ``[0, 1)`` (dropout, label smoothing)."""
    if not (_number(value) and 0 <= value < 1):
        raise OptionError(option, value, _range("a number in [0, 1)"))


def one_of(option: str, value: Any, allowed) -> None:
    """One of ``allowed``."""
    if value not in allowed:
        raise OptionError(option, value, f"is unknown; choose one of {', '.join(allowed)}")


def takes_options(*groups: type) -> Callable:
    """Decorate an ``__init__(self, ..., **options)`` whose options are the fields of ``groups``:
    its signature (what ``help`` and the config's key check read) names each field as a
    keyword-only argument with its default, in place of ``**options``."""

    def decorate(init: Callable) -> Callable:
        sig = inspect.signature(init)
        params = [p for p in sig.parameters.values() if p.kind is not p.VAR_KEYWORD]
        keyword = inspect.Parameter.KEYWORD_ONLY
        params += [
            inspect.Parameter(f.name, keyword, default=f.default, annotation=f.type)
            for group in groups
            for f in fields(group)
        ]
        init.__signature__ = sig.replace(parameters=params)
        return init

    return decorate


def split_options(owner: type, groups: Sequence[type], options: Mapping[str, Any]) -> list[Any]:
    """One object of each option class in ``groups``, in order, each made from the keys of
    ``options`` that are its fields (it checks their values). A key that no group has raises
    :class:`UnknownOption`, naming it and every option of ``owner``."""
    known = {f.name for group in groups for f in fields(group)}
    for key, value in options.items():
        if key not in known:
            names = list(inspect.signature(owner).parameters)
            why = f"is not an option of {owner.__name__}; its options: {', '.join(names)}"
            raise UnknownOption(key, value, why)
    return [
        group(**{f.name: options[f.name] for f in fields(group) if f.name in options})
        for group in groups
    ]
