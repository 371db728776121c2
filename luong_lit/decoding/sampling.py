"""Sampling: each word drawn from the model's next-word distribution instead of searched for.

At step ``t`` the word ``y_t`` is drawn from ``softmax(logits / temperature)``: lower
temperatures sharpen the distribution (towards greedy search), higher ones flatten it.
``top_k`` keeps the ``k`` most probable words only (Fan et al., 2018), ``top_p`` the fewest
whose probabilities add up to ``p`` (nucleus sampling, Holtzman et al., 2020). The length
bounds are greedy search's; ``<pad>`` and ``<s>`` are never drawn. The draw is
:func:`torch.multinomial`'s, with a :class:`torch.Generator` of the call's own, so that a
seed reproduces a call's samples and nothing else's random numbers move.

A batch is sampled at once: each sentence's ``n_best`` samples are rows of one batch, its
encoding computed once and copied. A sample's score is its log-probability under the model
(as forced decoding gives it, ``</s>`` included), not under the distribution it was drawn
from; a sentence's samples come best first by it.
"""

from __future__ import annotations

import torch
from torch import Tensor
from torch.nn import functional as F

from luong_lit.data.vocab import BOS_ID, EOS_ID, PAD_ID
from luong_lit.decoding.beam import sync_every
from luong_lit.decoding.prefix import Prefix
from luong_lit.decoding.search import NEG_INF, Hypothesis, Sampling
from luong_lit.nn.interface import DecodeModel, MemoryT, StateT


def generator(seed: int | None, device: torch.device) -> torch.Generator:
    """A generator of its own on ``device``, seeded with ``seed`` (None: a fresh seed)."""
    g = torch.Generator(device=device)
    if seed is None:
        g.seed()
    else:
        g.manual_seed(seed)
    return g


def filtered(logits: Tensor, cfg: Sampling) -> Tensor:
    """``logits / temperature`` (N, V) with the words outside ``top_k`` and ``top_p`` at -inf."""
    z = logits.float() / cfg.temperature  # (N, V)
    if 0 < cfg.top_k < z.size(-1):
        kth = z.topk(cfg.top_k, dim=-1).values[:, -1:]  # (N, 1)
        z = z.masked_fill(z < kth, NEG_INF)
    if cfg.top_p < 1.0:
        z_sorted, order = z.sort(dim=-1, descending=True)  # (N, V) x2
        p_sorted = z_sorted.softmax(-1)  # (N, V)
        before = p_sorted.cumsum(-1) - p_sorted  # (N, V) the mass of the more probable words
        drop = (before >= cfg.top_p).scatter(-1, order, before >= cfg.top_p)  # (N, V)
        z = z.masked_fill(drop, NEG_INF)
    return z


def draw(logits: Tensor, cfg: Sampling, gen: torch.Generator) -> Tensor:
    """One word a row (N,) drawn from the filtered distribution (:func:`filtered`)."""
    probs = filtered(logits, cfg).softmax(-1)  # (N, V)
    return torch.multinomial(probs, 1, generator=gen).squeeze(1)  # (N,)


@torch.no_grad()
def sample(
    model: DecodeModel[MemoryT, StateT], src: Tensor, src_len: Tensor, cfg: Sampling,
    keep_attention: bool = False, gen: torch.Generator | None = None, every: int | None = None,
    prefix: Prefix | None = None,
) -> list[list[Hypothesis]]:  # fmt: skip
    """``cfg.n_best`` samples of each sentence of a batch, best first by their score. ``gen``:
    the generator to draw with (default: one seeded with ``cfg.seed``); ``every``: steps between
    host reads (:func:`~luong_lit.decoding.beam.sync_every`); ``prefix``: words each sample
    begins with (:mod:`luong_lit.decoding.prefix`)."""
    B, N, S = src.size(0), cfg.n_best, src.size(1)
    gen = gen or generator(cfg.seed, src.device)
    every = every or sync_every(src.device)
    keep_attention = keep_attention and model.has_attention
    memory, state = model.encode(src, src_len)
    rows = torch.arange(B, device=src.device).repeat_interleave(N)  # (B*N,) sentence of each row
    memory, state = memory.index_select(rows), state.index_select(rows)
    max_len, min_len = cfg.bounds(src_len[rows])  # (B*N,) x2
    y_t = torch.full_like(rows, BOS_ID)  # (B*N,)
    done = torch.zeros_like(rows, dtype=torch.bool)  # (B*N,)
    score = torch.zeros(rows.size(0), dtype=torch.float64, device=src.device)  # (B*N,)
    words: list[Tensor] = []
    a: list[Tensor] = []
    for t in range(int(max_len.max()) + 1):
        logits, state, align = model.step(y_t, state, memory, t)  # (B*N, V)
        logp = F.log_softmax(logits.float(), -1)  # (B*N, V) log p(y_t | y_<t, x)
        y_t = draw(logits.masked_fill(_never(logits, t < min_len), NEG_INF), cfg, gen)  # (B*N,)
        y_t = y_t if prefix is None else prefix.choose(y_t, t, rows)
        y_t = torch.where(done | (t >= max_len), EOS_ID, y_t)  # (B*N,)
        score += torch.where(done, 0.0, logp.gather(1, y_t.unsqueeze(1)).squeeze(1).double())
        words.append(y_t)
        if keep_attention and align is not None:
            a.append(align.dense(S).squeeze(1))  # (B*N, S) a_t
        done = done | (y_t == EOS_ID)
        if (t + 1) % every == 0 and bool(done.all()):  # the one host read
            break
    a_all = torch.stack(a, 1) if keep_attention else None  # (B*N, T, S)
    return _hypotheses(torch.stack(words, 1), score, a_all, B, N)


def _never(logits: Tensor, early: Tensor) -> Tensor:
    """(N, V): the words a row may not draw: ``<pad>`` and ``<s>``, which no translation holds,
    and ``</s>`` where the output is still shorter than its least length (``early``, (N,))."""
    mask = torch.zeros_like(logits, dtype=torch.bool)  # (N, V)
    mask[:, [PAD_ID, BOS_ID]] = True
    mask[:, EOS_ID] = early
    return mask


def _hypotheses(
    words: Tensor, score: Tensor, a: Tensor | None, B: int, N: int
) -> list[list[Hypothesis]]:
    """Each sentence's ``N`` samples (rows ``b*N`` to ``b*N + N - 1``), best first; ``words``
    (B*N, T) end in ``</s>``, ``a`` (B*N, T, S) is each step's attention."""
    out: list[list[Hypothesis]] = []
    ids, scores = words.tolist(), score.tolist()
    for b in range(B):
        found: list[tuple[float, Hypothesis]] = []
        for r in range(b * N, (b + 1) * N):
            n = ids[r].index(EOS_ID)  # the forced </s> at the length limit, at the latest
            steps = a[r, : n + 1] if a is not None else None  # (n + 1, S)
            found.append((scores[r], Hypothesis(ids[r][:n], scores[r], steps, scores[r])))
        out.append([h for _, h in sorted(found, key=lambda sh: -sh[0])])
    return out
