"""Perplexity of reference translations under teacher forcing (pure functions)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TypeVar

import torch
from torch import Tensor
from torch.nn import functional as F

from luong_lit.data.loading.batching import Batch, collate
from luong_lit.data.vocab import PAD_ID
from luong_lit.decoding.forced import forced_steps
from luong_lit.nn.interface import AnyDecodeModel, DecodeModel, MemoryT, StateT
from luong_lit.nn.loss import token_nll
from luong_lit.nn.modes import evaluating

Examples = Sequence[
    tuple[int, list[int], list[int]]
]  # (index, src_ids, tgt_ids), as Split.examples()
ModelT = TypeVar("ModelT", bound=AnyDecodeModel)
#: ``batch_nll(model, batch)``: a batch's summed token NLL and its token count
BatchNLL = Callable[[ModelT, Batch], tuple[Tensor | float, int]]


def ppl_from_nll(nll: float, n_tokens: float) -> float:
    """``exp`` of the mean token NLL, capped at ``exp(50)`` so an untrained model stays finite."""
    return math.exp(min(nll / max(n_tokens, 1.0), 50.0))


@torch.no_grad()
def perplexity(
    net: ModelT, examples: Examples, batch_size: int = 128, batch_nll: BatchNLL[ModelT] = token_nll
) -> float:
    """``exp`` of the mean token NLL (``</s>`` counted, ``<s>`` not) over ``examples``, by a
    teacher-forced pass: ``batch_nll(net, batch)`` gives each batch's summed NLL and token count
    (:func:`luong_lit.nn.loss.token_nll`, or an engine's ``nll``); the model runs in eval mode
    and is put back after."""
    device = next(net.parameters()).device
    nll, n_tokens = 0.0, 0
    with evaluating(net):
        for i in range(0, len(examples), batch_size):
            n, t = batch_nll(net, collate(examples[i : i + batch_size]).to(device))
            nll, n_tokens = nll + float(n), n_tokens + t
    return ppl_from_nll(nll, n_tokens)


def stepwise_nll(model: DecodeModel[MemoryT, StateT], batch: Batch) -> tuple[float, int]:
    """Summed token NLL and token count through the decoding interface under teacher forcing
    (:func:`~luong_lit.decoding.forced.forced_steps`); the next-word distribution is the
    softmax of what ``step`` returns (Eq. 6 for one model; the combined scores of an ensemble)."""
    nll = 0.0
    for t, (scores, _) in enumerate(forced_steps(model, batch)):
        nll += float(
            F.cross_entropy(
                scores.float(), batch.tgt_out[:, t], ignore_index=PAD_ID, reduction="sum"
            )
        )
    return nll, int((batch.tgt_out != PAD_ID).sum())


def stepwise_perplexity(
    model: DecodeModel[MemoryT, StateT], examples: Examples, batch_size: int = 64
) -> float:
    """Perplexity of anything decoding can use (a model, an ensemble, an engine's decode-time
    form of either), through its steps (:func:`stepwise_nll`).

    For a single model it equals :func:`perplexity`.
    """
    return perplexity(model, examples, batch_size, stepwise_nll)
