"""Batched beam search over a model's ``encode``/``step``, its bookkeeping kept on the device.

Each sentence keeps ``beam`` live hypotheses; a candidate that ends in ``</s>`` is
finished. A sentence is done when no live hypothesis can still beat its ``n_best``-th finished
one (raw log-probabilities only fall), when it has collected ``stack_size`` finished
hypotheses (the authors' decoder, docs/paper_notes.md §11), or at its maximum length, where the
live hypotheses are closed with ``</s>``.

Nothing is read on the host while a batch is searched, except every ``sync_every`` steps
(:func:`sync_every`: each step on a CPU, where a read costs nothing and dropping the finished
sentences from the batch saves work; every 8 steps on a GPU): whether every sentence is done,
and which are, to drop them from the batch. Finished hypotheses live in fixed-size buffers
(:class:`FinishedHypotheses`: each sentence's ``n_best`` best so far, by the score they are
ranked by) and each step's choices in a :class:`Trail`, from which the words and attention of
the finished hypotheses are read back once, at the end.

The model is a :class:`~luong_lit.nn.interface.DecodeModel`; without attention
(``has_attention`` false) no per-step alignment is kept, so unk replacement has nothing to
follow. The options and the result type are :mod:`luong_lit.decoding.search`'s.
"""

from __future__ import annotations

import torch
from torch import Tensor
from torch.nn import functional as F

from luong_lit.data.vocab import BOS_ID, EOS_ID
from luong_lit.decoding.prefix import Prefix
from luong_lit.decoding.search import BeamSearch, Hypothesis
from luong_lit.decoding.trail import FinishedHypotheses, Trail
from luong_lit.nn.interface import DecodeModel, MemoryT, StateT


def sync_every(device: torch.device) -> int:
    """Steps between host reads: 1 on a CPU, 8 on an accelerator (whose queue a read drains)."""
    return 1 if device.type == "cpu" else 8


def _bound_lengths(logp: Tensor, t: int, min_len: Tensor, max_len: Tensor) -> Tensor:
    """No ``</s>`` before ``min_len``; only ``</s>`` from ``max_len`` on. ``logp`` is (B, K, V);
    masks on the device, nothing read on the host."""
    B = logp.size(0)
    early = (t < min_len).view(B, 1)  # (B, 1)
    logp[:, :, EOS_ID] = logp[:, :, EOS_ID].masked_fill(early, float("-inf"))
    forced = torch.full_like(logp[:1, :1], float("-inf"))  # (1, 1, V)
    forced[..., EOS_ID] = 0.0
    return torch.where((t >= max_len).view(B, 1, 1), forced, logp)  # (B, K, V)


def _rows(kept: Tensor, width: int, K: int) -> Tensor:
    """Rows of the next batch: each kept sentence's ``K`` rows (copies of its one row at step 0)."""
    offsets = torch.arange(K, device=kept.device) % width  # (K,) 0 … K-1, or all 0
    return (kept.unsqueeze(1) * width + offsets).view(-1)  # (B'*K,)


@torch.no_grad()
def beam_search(
    model: DecodeModel[MemoryT, StateT], src: Tensor, src_len: Tensor,
    cfg: BeamSearch = BeamSearch(), keep_attention: bool = True,
    every: int | None = None, prefix: Prefix | None = None,
) -> list[list[Hypothesis]]:  # fmt: skip
    """Translate a batch; returns for each sentence its ``n_best`` hypotheses, best first.
    ``every``: steps between host reads (default :func:`sync_every`); ``prefix``: words each
    sentence's hypotheses begin with (:mod:`luong_lit.decoding.prefix`)."""
    B, K, S = src.size(0), cfg.beam, src.size(1)
    every = every or sync_every(src.device)
    keep_attention = keep_attention and model.has_attention  # none: no a_t
    memory, state = model.encode(src, src_len)
    max_len, min_len = cfg.bounds(src_len)  # (B,) x2
    finished, trail = FinishedHypotheses(B, cfg, src.device), Trail(keep_attention)
    rows = torch.arange(B, device=src.device)  # (B,) the sentence of each batch row
    done = torch.zeros(B, dtype=torch.bool, device=src.device)  # (B,)
    scores = src.new_zeros((B, 1), dtype=torch.float)  # (B, width) live log-probabilities
    y, width = torch.full((B,), BOS_ID, dtype=torch.long, device=src.device), 1
    for t in range(int(max_len.max()) + 1):
        logits, state, align = model.step(y, state, memory, t)
        if t == 0:
            cfg.check_vocabulary(logits.size(-1))
        logp = F.log_softmax(logits.float(), -1).view(B, width, -1)  # (B, width, V)
        logp = _bound_lengths(logp, t, min_len, max_len)
        logp = logp if prefix is None else prefix.restrict(logp, t, rows)  # (B, width, V)
        a_t = align.dense(S).view(B, width, S) if keep_attention and align is not None else None
        cand = (scores.unsqueeze(-1) + logp).view(B, -1)  # (B, width*V)
        top_s, top_i = cand.topk(min(2 * K, cand.size(1)), dim=1)  # (B, 2K)
        beam, tok = top_i // logp.size(-1), top_i % logp.size(-1)  # (B, 2K)
        finished.collect(t, rows, top_s[:, :K], beam[:, :K], tok[:, :K], done)
        keep_s, keep_j = top_s.masked_fill(tok == EOS_ID, float("-inf")).topk(K, dim=1)  # (B, K)
        src_beam, new_tok = beam.gather(1, keep_j), tok.gather(1, keep_j)  # (B, K) x2
        trail.add(rows, src_beam, new_tok, a_t)  # a_t: (B, width, S)
        scores = keep_s
        done = done | (max_len <= t) | finished.done(rows, scores[:, 0])  # (B,)
        kept: Tensor | None = None  # None: every sentence stays (no host read this step)
        if (t + 1) % every == 0:  # the one host read: which sentences are still searching
            kept = (~done).nonzero().squeeze(1)  # (B',)
            if kept.numel() == 0:
                break
            kept = None if kept.numel() == B else kept
        index = torch.arange(B, device=src.device) if kept is None else kept  # (B',)
        if width == 1 or kept is not None:  # step 0's rows widen to K; finished ones leave
            memory = memory.index_select(_rows(index, width, K))
        if kept is not None:
            src_beam, new_tok, scores, done = (
                src_beam[kept],
                new_tok[kept],
                scores[kept],
                done[kept],
            )
            max_len, min_len, rows, B = max_len[kept], min_len[kept], rows[kept], kept.numel()
        flat = (src_beam + index.unsqueeze(1) * width).view(-1)  # (B'*K,) rows of the last batch
        state, y, width = state.index_select(flat), new_tok.view(-1), K
    return finished.hypotheses(trail, src_len)
