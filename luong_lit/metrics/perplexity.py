"""Teacher-forced token NLL and perplexity of reference translations (pure functions)."""
from __future__ import annotations

import math
from typing import Sequence

import torch
from torch import Tensor

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
