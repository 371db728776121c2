"""Run a module in eval mode for a while, then put it back as it was."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TypeVar

from luong_lit.nn.interface import Switchable

ModuleT = TypeVar("ModuleT", bound=Switchable)


@contextlib.contextmanager
def evaluating(module: ModuleT) -> Iterator[ModuleT]:
    """``module.eval()`` inside the block (dropout off); its previous mode restored after it."""
    was_training = module.training
    module.eval()
    try:
        yield module
    finally:
        module.train(was_training)
