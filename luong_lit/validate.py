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

import copy
import inspect
import math
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import fields
from typing import Any, TypeVar

from luong_lit.errors import ConfigError, UsageError

_Init = TypeVar("_Init", bound=Callable[..., Any])  # what takes_options decorates


class OptionError(ConfigError, UsageError):
    """A bad value of one or more options, each named where it was given: a key of a config
    (:meth:`within` its group: ``model.net.hidden_size``), a keyword of the Python API
    (``beam``), or a command-line flag (:meth:`flagged`: ``--beam``). Made from ``option,
    value, why`` (read as ``option=value why``), or by :meth:`about` from a template that names
    each option as ``{option}`` (options that are each valid, but not together). The one error
    type of every option check; a :class:`ConfigError` and a :class:`UsageError` alike."""

    FLAGS = {"dictionary": "--dict"}  # where a flag is not the option's name

    def __init__(self, option: str, value: Any = None, why: str = "", *,
                 template: str | None = None, options: Sequence[str] = ()) -> None:  # fmt: skip
        self.option, self.value, self.why = option, value, why
        self.template, self.options = template, tuple(options) or (option,)
        self.prefix, self.flags, self.is_keyword = "", False, False
        super().__init__(self._message())

    @classmethod
    def about(cls, template: str, *options: str) -> OptionError:
        """An error whose message is ``template`` with each of ``options`` as ``{option}``."""
        return cls(options[0] if options else "", template=template, options=options)

    @classmethod
    def keyword(cls, template: str, *options: str) -> OptionError:
        """:meth:`about` options of a function or command (the Python API's keywords, which a
        command names as its flags: :meth:`flagged`), not of a config."""
        return cls.about(template, *options).as_keyword()

    def as_keyword(self) -> OptionError:
        """The same error, about a keyword of a function or command (see :meth:`keyword`)."""
        return self._renamed(is_keyword=True)

    def name(self, option: str) -> str:
        """How ``option`` is named: its config path, its keyword, or its flag."""
        if self.flags:
            return self.FLAGS.get(option, "--" + option.replace("_", "-"))
        return self.prefix + option

    def _message(self) -> str:
        if self.template is not None:
            return self.template.format(**{o: self.name(o) for o in self.options})
        return f"{self.name(self.option)}={self.value!r} {self.why}"

    def _renamed(self, **changes: Any) -> OptionError:
        out = copy.copy(self)
        out.__dict__.update(changes)
        out.args = (out._message(),)
        return out

    def within(self, group: str) -> OptionError:
        """The same error, each option named by its path in ``group`` (``model.net``)."""
        return self._renamed(prefix=f"{group}.{self.prefix}")

    def flagged(self) -> OptionError:
        """The same error, each option named as the command line's flag."""
        return self._renamed(flags=True)


class UnknownOption(OptionError):
    """A keyword its constructor does not take: ``option`` and the options it does take."""

    def _message(self) -> str:
        return f"{self.name(self.option)} {self.why}"


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


def takes_options(*groups: type) -> Callable[[_Init], _Init]:
    """Decorate an ``__init__(self, ..., **options)`` whose options are the fields of ``groups``:
    its signature (what ``help`` and the config's key check read) names each field as a
    keyword-only argument with its default, in place of ``**options``."""

    def decorate(init: _Init) -> _Init:
        sig = inspect.signature(init)
        params = [p for p in sig.parameters.values() if p.kind is not p.VAR_KEYWORD]
        keyword = inspect.Parameter.KEYWORD_ONLY
        params += [
            inspect.Parameter(f.name, keyword, default=f.default, annotation=f.type)
            for group in groups
            for f in fields(group)
        ]
        init.__signature__ = sig.replace(parameters=params)  # type: ignore[attr-defined]
        return init

    return decorate


def refuse_unknown(
    owner: Callable, known: Collection[str], options: Mapping[str, Any], *, keywords: bool = False
) -> None:
    """Raise :class:`UnknownOption` for the first key of ``options`` not in ``known``, naming
    it and every option of ``owner`` (a class, or a function whose keywords they are:
    ``keywords``, :meth:`OptionError.as_keyword`)."""
    for key, value in options.items():
        if key not in known:
            names = list(inspect.signature(owner).parameters)
            why = f"is not an option of {owner.__name__}; its options: {', '.join(names)}"
            err = UnknownOption(key, value, why)
            raise err.as_keyword() if keywords else err


def split_options(
    owner: Callable, groups: Sequence[type], options: Mapping[str, Any], *, keywords: bool = False
) -> list[Any]:
    """One object of each option class in ``groups``, in order, each made from the keys of
    ``options`` that are its fields (it checks their values); a key that no group has is
    refused (:func:`refuse_unknown`)."""
    refuse_unknown(owner, {f.name for g in groups for f in fields(g)}, options, keywords=keywords)
    return [
        group(**{f.name: options[f.name] for f in fields(group) if f.name in options})
        for group in groups
    ]
