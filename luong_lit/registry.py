"""Names that configs and checkpoints may give a part (an attention, a score, a corpus), each
with what it stands for, open to extensions.

A :class:`Registry` grows only by :meth:`Registry.add`: the kit adds its own parts the way an
extension adds one, and a config or a checkpoint can name nothing that was not added, so a name
never imports code. The config layer reads the registries (:meth:`Registry.of_kind`) each time
it composes, to offer every name as a config group's option.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any, ClassVar

#: the values a config or a checkpoint may give a part's option (and the network's)
SCALARS = (bool, int, float, str, type(None))


def _redefined(old: Any, new: Any) -> bool:
    """Whether ``new`` is ``old`` defined again (a class of the same module and name: a module
    or a notebook cell run twice), which may take its place."""
    if not (isinstance(old, type) and isinstance(new, type)):
        return old == new
    return (old.__module__, old.__qualname__) == (new.__module__, new.__qualname__)


class Registry(Mapping[str, Any]):
    """The names an option of one ``kind`` may take, each with what it stands for, in the order
    they were added. Read as a mapping (``name in r``, ``r[name]``)."""

    NAME: ClassVar[re.Pattern] = re.compile(r"[a-z][a-z0-9_]*\Z")
    _every: ClassVar[list[Registry]] = []

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._entries: dict[str, Any] = {}
        Registry._every.append(self)

    def __getitem__(self, name: str) -> Any:
        return self._entries[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}: {', '.join(self._entries)})"

    def add(self, name: str, entry: Any) -> None:
        """Add ``entry`` as ``name``: lower-case letters, digits and ``_``, not ``none``, and
        not taken by another entry (``ValueError``)."""
        if not isinstance(name, str) or not self.NAME.match(name) or name == "none":
            raise ValueError(
                f"{self.kind} name {name!r}: lower-case letters, digits and _, starting with a "
                "letter (not 'none')"
            )
        old = self._entries.get(name, entry)
        if old is not entry and not _redefined(old, entry):
            raise ValueError(f"{self.kind} {name!r} is taken already, by {old!r}")
        self._entries[name] = entry

    def remove(self, name: str) -> None:
        """Take ``name`` out again (a test's or a notebook's own entry)."""
        del self._entries[name]

    @classmethod
    def of_kind(cls, kind: str) -> list[Registry]:
        """The registries of ``kind`` made so far (``attention``, ``score``, ``corpus``)."""
        return [r for r in cls._every if r.kind == kind]
