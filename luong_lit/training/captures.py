"""Every bucket a fixed-shape run's training batches can take, given to its engine before the
first step (a captured step captures one CUDA graph a bucket then, not in the middle of
training)."""

from __future__ import annotations

import logging
from typing import Any

log = logging.getLogger(__name__)


def prepare_buckets(module: Any) -> None:
    """Hand ``module.engine`` every bucket the batch sampler's examples can fill, under the
    precision plugin's training-step context: the autocast the steps themselves run in
    (Lightning enters it only around ``training_step``), so a graph captured now is the one
    the steps replay."""
    pad = module.engine.padding()
    if pad is None:
        return
    trainer = module.trainer
    sampler = getattr(trainer.train_dataloader, "batch_sampler", None)
    if not hasattr(sampler, "src_lens"):
        if getattr(module.engine, "mode", None) == "capture":  # else nothing is captured
            log.warning("fixed shapes: the batch sampler names no lengths, so each bucket "
                        "is captured when training first meets it, not before step 1")  # fmt: skip
        return
    shapes = pad.shapes(sampler.src_lens, sampler.tgt_lens)
    with trainer.precision_plugin.train_step_context():
        module.engine.prepare(module.net, module.label_smoothing, shapes)
