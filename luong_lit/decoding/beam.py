"""Batched beam search over the model's ``encode``/``step`` interface (no model internals).

Each sentence keeps ``beam_size`` live hypotheses; a candidate that ends in ``</s>`` is moved
to that sentence's list of finished hypotheses. A sentence is done when no live hypothesis can
still beat its ``n_best``-th finished one (raw log-probabilities only fall), when it has
collected ``stack_size`` finished hypotheses (the authors' decoder, docs/paper_notes.md §11), or at
its maximum length, where the live hypotheses are closed with ``</s>``.

The model is a :class:`~luong_lit.nn.interface.DecodeModel`; without attention
(``has_attention`` false) no per-step alignment is kept, so unk replacement has nothing to
follow. The options and the result type are :mod:`luong_lit.decoding.search`'s.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import Tensor
from torch.nn import functional as F

from luong_lit.data.vocab import BOS_ID, EOS_ID
from luong_lit.decoding.search import Hypothesis, Search


@dataclass
class _Sentence:
    finished: list[Hypothesis] = field(default_factory=list)
    done: bool = False


def _bound_lengths(logp: Tensor, t: int, min_len: Tensor, max_len: Tensor) -> Tensor:
    """No ``</s>`` before ``min_len``; only ``</s>`` from ``max_len`` on. ``logp`` is (B, K, V)."""
    B = logp.size(0)
    if bool((t < min_len).any()):
        logp[:, :, EOS_ID] = logp[:, :, EOS_ID].masked_fill((t < min_len).view(B, 1), float("-inf"))
    if bool((t >= max_len).any()):
        forced = torch.full_like(logp, float("-inf"))
        forced[:, :, EOS_ID] = 0.0
        logp = torch.where((t >= max_len).view(B, 1, 1), forced, logp)
    return logp


def _is_done(sent: _Sentence, best_live: float, cfg: Search) -> bool:
    if cfg.stack_size is not None:
        return len(sent.finished) >= cfg.stack_size
    if len(sent.finished) < cfg.n_best:
        return False
    if cfg.length_penalty is not None:  # normalised scores can still rise: keep searching
        return False
    kth = sorted(h.score for h in sent.finished)[-cfg.n_best]
    return best_live <= kth


@torch.no_grad()
def beam_search(
    model, src: Tensor, src_len: Tensor, cfg: Search = Search(), keep_attention: bool = True
) -> list[list[Hypothesis]]:
    """Translate a batch; returns for each sentence its ``n_best`` hypotheses, best first."""
    B, K, S = src.size(0), cfg.beam_size, src.size(1)
    keep_attention = keep_attention and model.has_attention  # none: no a_t
    memory, state = model.encode(src, src_len)
    width = 1  # rows per sentence: its one live hypothesis at step 0, then K
    scores = src.new_zeros((B, 1), dtype=torch.float)  # (B, width)
    ids = torch.full((B, 1, 0), BOS_ID, dtype=torch.long, device=src.device)
    attn = (
        src.new_zeros((B, 1, 0, S), dtype=torch.float) if keep_attention else None
    )  # (B, width, t, S)
    y = torch.full((B,), BOS_ID, dtype=torch.long, device=src.device)
    max_len, min_len = cfg.bounds(src_len)  # (B,) x2
    sents = [_Sentence() for _ in range(B)]
    active = list(sents)  # the sentences of the current batch rows, in order
    for t in range(int(max_len.max()) + 1):
        logits, state, align = model.step(y, state, memory, t)
        if t == 0 and logits.size(-1) < K:
            raise ValueError(
                f"beam size {K} is larger than the target vocabulary of {logits.size(-1)} words"
            )
        logp = F.log_softmax(logits.float(), -1).view(B, width, -1)  # (B, width, V)
        logp = _bound_lengths(logp, t, min_len, max_len)
        a_t = align.dense(S).view(B, width, S) if keep_attention else None  # (B, width, S)
        cand = (scores.unsqueeze(-1) + logp).view(B, -1)  # (B, width*V)
        top_s, top_i = cand.topk(min(2 * K, cand.size(1)), dim=1)  # (B, 2K)
        beam, tok = top_i // logp.size(-1), top_i % logp.size(-1)  # (B, 2K)
        _collect_finished(active, top_s, beam, tok, ids, attn, a_t, cfg)
        live_s = top_s.masked_fill(tok == EOS_ID, float("-inf"))
        keep_s, keep_j = live_s.topk(K, dim=1)  # (B, K) the best non-</s> candidates
        src_beam = beam.gather(1, keep_j)  # (B, K)
        new_tok = tok.gather(1, keep_j)
        parents = ids.gather(1, src_beam.unsqueeze(-1).expand(-1, -1, ids.size(2)))  # (B, K, t)
        ids = torch.cat([parents, new_tok.unsqueeze(-1)], 2)  # (B, K, t+1)
        attn = _extend_attention(attn, a_t, src_beam)
        scores = keep_s
        best_live, at_max = scores[:, 0].tolist(), (max_len <= t).tolist()
        for b, sent in enumerate(active):
            sent.done = sent.done or at_max[b] or _is_done(sent, best_live[b], cfg)
        keep = [b for b, sent in enumerate(active) if not sent.done]
        if not keep:
            break
        kept = torch.tensor(keep, device=src.device)  # (B',) sentences still searching
        if len(keep) < B or width == 1:  # finished sentences leave; step 0's rows widen to K
            memory = memory.index_select(_rows(kept, width, K))
        if len(keep) < B:
            src_beam, new_tok, ids = src_beam[kept], new_tok[kept], ids[kept]
            attn = attn[kept] if keep_attention else None
            scores, max_len, min_len = scores[kept], max_len[kept], min_len[kept]
            active, B = [active[b] for b in keep], len(keep)
        flat = (src_beam + kept.unsqueeze(1) * width).view(-1)  # (B'*K,) rows of the previous batch
        state, y, width = state.index_select(flat), new_tok.view(-1), K
    return [_best(sent, cfg) for sent in sents]


def _rows(kept: Tensor, width: int, K: int) -> Tensor:
    """Rows of the next batch: each kept sentence's ``K`` rows (copies of its one row at step 0)."""
    offsets = torch.arange(K, device=kept.device) % width  # (K,) 0 … K-1, or all 0
    return (kept.unsqueeze(1) * width + offsets).view(-1)  # (B'*K,)


def _extend_attention(attn: Tensor | None, a_t: Tensor | None, src_beam: Tensor) -> Tensor | None:
    """Follow each kept hypothesis to its parent beam and append this step's ``a_t``."""
    if attn is None:
        return None
    (B, K), (t, S) = src_beam.shape, attn.shape[2:]
    parents = attn.gather(1, src_beam.view(B, K, 1, 1).expand(B, K, t, S))  # (B, K, t, S)
    return torch.cat(
        [parents, a_t.gather(1, src_beam.unsqueeze(-1).expand(B, K, S)).unsqueeze(2)], 2
    )


def _collect_finished(sents, top_s, beam, tok, ids, attn, a_t, cfg: Search) -> None:
    """Move candidates ending in ``</s>`` into their sentence's finished list."""
    K = cfg.beam_size
    for b, j in (tok[:, :K] == EOS_ID).nonzero().tolist():  # only </s> among the top K count
        sent = sents[b]
        if sent.done or top_s[b, j] == float("-inf"):
            continue
        k = int(beam[b, j])
        steps = (
            torch.cat([attn[b, k], a_t[b, k].unsqueeze(0)], 0) if attn is not None else None
        )  # (t+1, S)
        hyp = Hypothesis(ids[b, k].tolist(), float(top_s[b, j]), steps)
        hyp.norm_score = cfg.normalise(hyp.score, len(hyp.ids) + 1)
        sent.finished.append(hyp)


def _best(sent: _Sentence, cfg: Search) -> list[Hypothesis]:
    ranked = sorted(sent.finished, key=lambda h: h.norm_score, reverse=True)
    return ranked[: cfg.n_best]
