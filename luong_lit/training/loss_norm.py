"""What a batch's summed NLL is divided by: ``model.loss_norm`` (paper §4.1)."""

from __future__ import annotations

from typing import Any

from luong_lit.data.loading.batching import Batch

LOSS_NORMS = ("sentences", "nominal", "tokens")


def loss_denominator(loss_norm: str, batch: Batch, tokens, accumulate: int, nominal: int) -> Any:
    """What a batch's summed NLL is divided by, so that an optimizer step's loss is its whole
    batch's, normalised as ``loss_norm`` says: its sentences (paper §4.1), its target tokens,
    or the ``nominal`` size (nmt.matlab). Accumulating gradients over ``accumulate`` batches
    (Lightning divides each one's loss by ``accumulate``), each divides by its step's totals
    (``batch.group``) over ``accumulate``: the step's gradient is one large batch's. DDP's
    average over the ranks makes each rank's share the global batch's (docs/guide/clusters.md,
    "Beyond one machine")."""
    if loss_norm == "nominal":
        return nominal
    if accumulate > 1 and batch.group is not None:
        sentences, group_tokens = batch.group
        return (group_tokens if loss_norm == "tokens" else sentences) / accumulate
    return tokens if loss_norm == "tokens" else len(batch)
