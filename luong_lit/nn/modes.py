"""Run a module in eval mode for a while, then put it back as it was."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from torch import nn


@contextlib.contextmanager
def evaluating(module: nn.Module) -> Iterator[nn.Module]:
    """``module.eval()`` inside the block (dropout off); its previous mode restored after it."""
    was_training = module.training
    module.eval()
    try:
        yield module
    finally:
        module.train(was_training)
