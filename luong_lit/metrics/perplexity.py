"""Teacher-forced token NLL and perplexity of reference translations (pure functions)."""
from __future__ import annotations

import math
from typing import Sequence

import torch
from torch import Tensor
from torch.nn import functional as F

from luong_lit.data.batching import Batch, collate
from luong_lit.data.vocab import PAD_ID
from luong_lit.nn.loss import linear_cross_entropy


def token_nll(net, batch: Batch, label_smoothing: float = 0.0) -> tuple[Tensor, int]:
    """Summed token NLL of the references under teacher forcing, and the token count.

    Logits are computed for non-pad positions only, so padding costs no softmax work, and
    chunk by chunk (:func:`luong_lit.nn.loss.linear_cross_entropy`). ``label_smoothing``
    gives the smoothed training loss instead (0: the NLL, which perplexity uses).
    """
    h_tilde, _ = net(batch.src, batch.src_len, batch.tgt_in)  # (B, T, d)
    mask = batch.tgt_out != PAD_ID  # (B, T)
    W_s = net.decoder.W_s
    nll = linear_cross_entropy(h_tilde[mask], W_s.weight, W_s.bias, batch.tgt_out[mask],
                               label_smoothing=label_smoothing)  # Eq. 6
    return nll, int(mask.sum())


def ppl_from_nll(nll: float, tokens: float) -> float:
    """``exp`` of the mean token NLL, capped at ``exp(50)`` so an untrained model stays finite."""
    return math.exp(min(nll / max(tokens, 1.0), 50.0))


@torch.no_grad()
def perplexity(net, examples: Sequence[tuple[int, list[int], list[int]]], batch_size: int = 128) -> float:
    """``exp`` of the mean token NLL (``</s>`` counted, ``<s>`` not) over ``examples``.

    ``examples`` are ``(index, src_ids, tgt_ids)`` as :meth:`Split.examples` gives them.
    """
    was_training = net.training
    net.eval()
    device = next(net.parameters()).device
    nll, tokens = 0.0, 0
    for i in range(0, len(examples), batch_size):
        n, t = token_nll(net, collate(examples[i:i + batch_size]).to(device))
        nll, tokens = nll + float(n), tokens + t
    net.train(was_training)
    return ppl_from_nll(nll, tokens)


@torch.no_grad()
def stepwise_perplexity(model, examples: Sequence[tuple[int, list[int], list[int]]], batch_size: int = 64) -> float:
    """Perplexity through the decoding interface (``encode``, then ``step`` under teacher forcing).

    It scores any model that decoding can use, ensembles included: the next-word distribution
    is the softmax of what ``step`` returns (Eq. 6 for one model; the combined scores of an
    ensemble). For a single model it equals :func:`perplexity`.
    """
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    nll, tokens = 0.0, 0
    for i in range(0, len(examples), batch_size):
        batch = collate(examples[i:i + batch_size]).to(device)
        memory, state = model.encode(batch.src, batch.src_len)
        for t in range(batch.tgt_in.size(1)):
            scores, state, _ = model.step(batch.tgt_in[:, t], state, memory, t)  # (B, V)
            nll += float(F.cross_entropy(scores.float(), batch.tgt_out[:, t], ignore_index=PAD_ID, reduction="sum"))
        tokens += int((batch.tgt_out != PAD_ID).sum())
    model.train(was_training)
    return ppl_from_nll(nll, tokens)
