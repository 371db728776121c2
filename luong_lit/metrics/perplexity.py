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
def _corpus_ppl(model, examples, batch_size: int, batch_nll) -> float:
    """``exp`` of the mean token NLL over ``examples``, ``batch_nll(model, batch)`` giving each
    batch's summed NLL and token count; the model runs in eval mode and is put back after."""
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    nll, tokens = 0.0, 0
    for i in range(0, len(examples), batch_size):
        n, t = batch_nll(model, collate(examples[i:i + batch_size]).to(device))
        nll, tokens = nll + float(n), tokens + t
    model.train(was_training)
    return ppl_from_nll(nll, tokens)


def perplexity(net, examples: Sequence[tuple[int, list[int], list[int]]], batch_size: int = 128) -> float:
    """``exp`` of the mean token NLL (``</s>`` counted, ``<s>`` not) over ``examples``.

    ``examples`` are ``(index, src_ids, tgt_ids)`` as :meth:`Split.examples` gives them.
    """
    return _corpus_ppl(net, examples, batch_size, token_nll)


def stepwise_nll(model, batch: Batch) -> tuple[float, int]:
    """Summed token NLL and token count through the decoding interface under teacher forcing:
    ``encode``, then one ``step`` per target position; the next-word distribution is the
    softmax of what ``step`` returns (Eq. 6 for one model; the combined scores of an ensemble)."""
    memory, state = model.encode(batch.src, batch.src_len)
    nll = 0.0
    for t in range(batch.tgt_in.size(1)):
        scores, state, _ = model.step(batch.tgt_in[:, t], state, memory, t)  # (B, V)
        nll += float(F.cross_entropy(scores.float(), batch.tgt_out[:, t], ignore_index=PAD_ID, reduction="sum"))
    return nll, int((batch.tgt_out != PAD_ID).sum())


def stepwise_perplexity(model, examples: Sequence[tuple[int, list[int], list[int]]], batch_size: int = 64) -> float:
    """Perplexity of any model that decoding can use, ensembles included (:func:`stepwise_nll`).

    For a single model it equals :func:`perplexity`.
    """
    return _corpus_ppl(model, examples, batch_size, stepwise_nll)
