"""The fixed-shape decoder step through ``torch.compile``, differentiated as eager autograd is.

Autograd never runs a backward pass under autocast: each op's backward computes in the dtypes
its forward used, and a cast's backward turns the gradient back to the dtype it came from.
``torch.compile`` instead traces the backward graph with an autocast of its own
(``torch._functorch.config.backward_pass_autocast``, by default "the same as the forward's"),
which on a GPU under bf16-mixed met bf16 tensors under the device's default fp16 autocast and
failed to compile ("Unexpected floating ScalarType in at::autocast::prioritize"). The step is
therefore compiled and run with that setting ``off``: its backward is eager autograd's. That
setting is private to torch, and this module is the one place that touches it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch


def compiled_step(step: Callable[..., Any]) -> Callable[..., Any]:
    """``step`` compiled by ``torch.compile`` (inductor), its backward traced without autocast."""
    compiled = torch.compile(step)  # shapes per bucket; t becomes dynamic

    def run(*args: Any) -> Any:
        from torch._functorch import config

        with config.patch(backward_pass_autocast="off"):
            return compiled(*args)

    return run
