"""Mixed precision with the paper's gradient clipping, whatever the optimizer.

Lightning refuses to clip the gradients of a fused optimizer under mixed precision, because
in 16-mixed such an optimizer unscales the gradients inside its own step, after the clipping
would have seen them scaled. The kit keeps the clipping (paper §4.1) in both mixed precisions:

* ``bf16-mixed`` has no gradient scaler: the gradients are what they are, and the kit clips them
  itself with ``torch.nn.utils`` (what Lightning's own clipping calls), so the fused optimizer
  stays (:func:`clip_unscaled`);
* ``16-mixed`` scales the loss: the optimizer is made in its plain, unfused form, so that
  Lightning unscales the gradients before clipping them (:func:`plain_if_scaled`).
"""

from __future__ import annotations

import logging
from typing import Any

import torch

from luong_lit.training.lightning_internals import optimizer_unscales_in_step

log = logging.getLogger(__name__)


def _fused(optimizer: Any) -> bool:
    """Whether an optimizer (or its factory) steps in its fused form, unscaling inside it."""
    if isinstance(optimizer, torch.optim.Optimizer):
        return optimizer_unscales_in_step(optimizer)
    return bool(getattr(optimizer, "keywords", {}).get("fused"))


def plain_if_scaled(trainer, factory) -> dict[str, Any]:
    """Keywords for the optimizer ``factory``: ``fused=False`` where the loss is scaled
    (16-mixed) and the gradients clipped, else none."""
    scaled = getattr(getattr(trainer, "precision_plugin", None), "scaler", None) is not None
    if scaled and trainer.gradient_clip_val and _fused(factory):
        log.info("16-mixed with gradient clipping: the optimizer runs unfused, so that the "
                 "gradients are unscaled before they are clipped")  # fmt: skip
        return {"fused": False}
    return {}


def clip_unscaled(trainer, optimizer, clip_val, algorithm) -> bool:
    """Clip a fused optimizer's gradients under mixed precision without a scaler (bf16-mixed),
    which Lightning refuses to; True if it did (else Lightning's own clipping applies)."""
    plugin = getattr(trainer, "precision_plugin", None)
    mixed = getattr(plugin, "precision", None) in ("bf16-mixed", "16-mixed")
    if not (clip_val and mixed and plugin.scaler is None and _fused(optimizer)):
        return False
    params = [p for group in optimizer.param_groups for p in group["params"]]
    if algorithm == "value":
        torch.nn.utils.clip_grad_value_(params, clip_value=clip_val)
    else:
        torch.nn.utils.clip_grad_norm_(params, clip_val)
    return True


def note_cpu_mixed(trainer) -> None:
    """Say once that mixed precision on the CPU costs time rather than saving it (the results
    log's "Mixed precision on the CPU")."""
    precision = getattr(getattr(trainer, "precision_plugin", None), "precision", "32-true")
    accelerator = type(getattr(trainer, "accelerator", None)).__name__
    if precision in ("bf16-mixed", "16-mixed") and accelerator == "CPUAccelerator":
        log.warning("%s on the CPU trains slower than 32-true (0.91x measured, results log); "
                    "it pays on a GPU", precision)  # fmt: skip


def clip_without_embeddings(module, gradient_clip_val: float) -> None:
    """The rescaling of §4.1 with the norm taken over every parameter of ``module`` but its
    network's embeddings (nmt.matlab; docs/paper_notes.md §8), every parameter still rescaled.
    Under the limit the factor is clamped to 1 rather than tested, so a GPU never waits."""
    net = module.net
    emb = {id(net.encoder.embedding.weight), id(net.decoder.embedding.weight)}
    params = [p for p in module.parameters() if p.grad is not None]
    kept = [p.grad.norm() for p in params if id(p) not in emb]
    norm = torch.linalg.vector_norm(torch.stack(kept))
    torch.nn.utils.clip_grads_with_norm_(params, gradient_clip_val, norm)  # factor clamped at 1
