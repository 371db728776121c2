"""Beam search at a fixed shape: every tensor of a step after the first has one shape at every
step, and nothing is read on the host but one flag every ``every`` steps.

The first step runs on one row a sentence (its ``K`` slots would all be copies of it; running
it on ``K`` rows scored ``[0, −inf, …]`` changes the last bits of the a_t products), every later
step on ``B·K`` rows; no row is ever dropped, a sentence that is done carries a flag that its
later candidates are not collected by, and what each step chose is written into buffers made
once for the longest output a batch of this source width may have (:class:`Steps`), at the
step's index. What it finds equals :func:`~luong_lit.decoding.beam.beam_search`'s, which drops
the finished sentences from the batch (``tests/test_decoding_fixed.py`` compares them in
float64): the same hypotheses, raw and ranking scores and n-best order, attention to 1e-12,
with length penalties, length bounds, the authors' stack rule, prefixes and ensembles. From the
second step on, a step's operators do not depend on the batch's progress (the same test),
which capturing a chunk of steps as one CUDA graph needs; no capture is built yet.

The options and the result type are :mod:`luong_lit.decoding.search`'s.
"""

from __future__ import annotations

import torch
from torch import Tensor
from torch.nn import functional as F

from luong_lit.data.vocab import BOS_ID, EOS_ID
from luong_lit.decoding.prefix import Prefix
from luong_lit.decoding.search import Hypothesis, Search
from luong_lit.nn.interface import DecodeModel, MemoryT, StateT

NEG_INF = float("-inf")


def most_steps(S: int, cfg: Search) -> int:
    """The steps a batch of source width ``S`` may take (its longest output and its ``</s>``),
    a host value known before the search: no sentence is longer than its batch's width."""
    longest, _ = cfg.bounds(torch.tensor([S]))  # (1,) x2
    return max(int(longest[0]), 0) + 1


class Steps:
    """Per step ``t`` (rows of preallocated ``(T, B, K)`` buffers): each live slot's parent slot
    and word after the step, the ``a_t`` of the slots entering it, and the raw score (−inf:
    none) and slot of each candidate that ended there in ``</s>``; the length bounds as tables
    read at ``t``."""

    def __init__(
        self, T: int, B: int, K: int, keep_attention: bool, max_len: Tensor, min_len: Tensor
    ):
        dev, long = max_len.device, torch.long
        self.parent = torch.zeros((T, B, K), dtype=long, device=dev)
        self.word = torch.zeros((T, B, K), dtype=long, device=dev)
        self.ended = torch.full((T, B, K), NEG_INF, device=dev)  # raw score of a </s> candidate
        self.slot = torch.zeros((T, B, K), dtype=long, device=dev)  # the slot it left
        self.a: Tensor | None = None  # (T, B, K, S) a_t, made at the first step that has one
        self.keep_attention = keep_attention
        t = torch.arange(T, device=dev).unsqueeze(1)  # (T, 1)
        self.eos_bias = torch.zeros((T, B, 1), device=dev)  # -inf: no </s> before min_len
        self.eos_bias.masked_fill_((t < min_len).unsqueeze(2), NEG_INF)
        self.forced = (t >= max_len).view(T, B, 1, 1)  # only </s> from max_len on

    def write(self, t: int, parent: Tensor, word: Tensor, a_t: Tensor | None) -> None:
        self.parent[t], self.word[t] = parent, word  # (B, K) x2
        if self.keep_attention and a_t is not None:
            if self.a is None:
                self.a = a_t.new_zeros((*self.parent.shape, a_t.size(-1)))  # (T, B, K, S)
            self.a[t] = a_t  # (B, width, S), the first step's one slot to every slot

    def read(self, sent: Tensor, end: Tensor, slot: Tensor) -> tuple[Tensor, Tensor | None]:
        """The words (E, T) and attention (E, T, S) of ``E`` hypotheses, each of sentence
        ``sent`` ending at step ``end`` from live slot ``slot`` (words past ``end - 1`` and
        attention rows past ``end`` zero), walking the parents back from the last step."""
        T, E = self.parent.size(0), sent.numel()
        words = torch.zeros((E, T), dtype=torch.long, device=sent.device)  # (E, T)
        att = None if self.a is None else self.a.new_zeros((E, T, self.a.size(-1)))  # (E, T, S)
        k = slot.clone()  # (E,) the slot entering step s + 1
        for s in reversed(range(T)):
            inside, at_end = end > s, end == s  # (E,) x2
            p = self.parent[s, sent, k]  # (E,)
            words[:, s] = torch.where(inside, self.word[s, sent, k], 0)
            k = torch.where(inside, p, k)  # (E,) the slot entering step s
            if att is not None and self.a is not None:
                att[:, s] = torch.where((inside | at_end).unsqueeze(1), self.a[s, sent, k], 0.0)
        return words, att


def _divisors(cfg: Search, T: int, device: torch.device) -> Tensor | None:
    """(T, 1, 1) what a raw score ending at step ``t`` (``t`` words and ``</s>``) is divided by
    to rank it (:meth:`Search.divisor`); None for raw scores."""
    if cfg.length_penalty is None:
        return None
    div = [cfg.divisor(t + 1) for t in range(T)]  # host floats, as Search.normalise's
    return torch.tensor(div, dtype=torch.float64, device=device).view(T, 1, 1)


def _ranked(cfg: Search, steps: Steps, T: int) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """Each sentence's ``n_best`` finished hypotheses, best first by the score they are ranked
    by, the first found first among equals: (sentence, step, slot, raw score, ranking score)."""
    raw = steps.ended[:T].double()  # (T, B, K)
    div = _divisors(cfg, T, raw.device)
    norm = raw if div is None else raw / div  # (T, B, K)
    B, K = raw.size(1), raw.size(2)
    flat = norm.permute(1, 0, 2).reshape(B, T * K)  # (B, T*K) in the order they were found
    order = flat.sort(dim=1, descending=True, stable=True).indices[:, : cfg.n_best]  # (B, n)
    sent, j = (flat.gather(1, order) > NEG_INF).nonzero(as_tuple=True)  # (E,) x2
    at = order[sent, j]  # (E,) index into T*K
    end, k = at // K, at % K  # (E,) x2
    return sent, end, steps.slot[end, sent, k], torch.stack([raw[end, sent, k], norm[end, sent, k]])


def _hypotheses(cfg: Search, steps: Steps, T: int, B: int) -> list[list[Hypothesis]]:
    sent, end, slot, scores = _ranked(cfg, steps, T)
    words, att = steps.read(sent, end, slot)
    out: list[list[Hypothesis]] = [[] for _ in range(B)]
    rows = zip(sent.tolist(), end.tolist(), words.tolist(), *scores.tolist())
    for e, (b, n, ids, raw, norm) in enumerate(rows):
        out[b].append(Hypothesis(ids[:n], raw, None if att is None else att[e, : n + 1], norm))
    return out


class _Done:
    """Whether each sentence is done (B,), from what it found so far: ``stack_size`` found, or
    (raw scores) ``n_best`` found none of which its best live hypothesis can still beat."""

    def __init__(self, cfg: Search, B: int, device: torch.device) -> None:
        self.cfg, self.n = cfg, cfg.n_best
        self.count = torch.zeros(B, dtype=torch.long, device=device)  # found so far
        self.best = torch.full((B, self.n), NEG_INF, dtype=torch.float64, device=device)

    def update(self, ok: Tensor, ended: Tensor, best_live: Tensor) -> Tensor | None:
        self.count += ok.sum(1)
        if self.cfg.stack_size is not None:
            return self.count >= self.cfg.stack_size
        if self.cfg.length_penalty is not None:  # normalised scores can still rise
            return None
        if self.n == 1:
            self.best = torch.maximum(self.best, ended.amax(1, keepdim=True).double())
        else:
            self.best = torch.cat([self.best, ended.double()], 1).topk(self.n).values
        return (self.count >= self.n) & (best_live.double() <= self.best[:, -1])


def _choose(
    t: int, logp: Tensor, scores: Tensor, finished: Tensor, steps: Steps, K: int
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """Step ``t``'s choice from ``logp`` (B, width, V) and the live ``scores`` (B, width): the
    ``</s>`` candidates among the best ``K`` are written to ``steps`` (those of a sentence not
    ``finished`` (B, 1) yet), the best ``K`` others stay live. Returns their scores, parent slots
    and words (B, K) and which candidates ended here (B, K)."""
    B, width, V = logp.shape
    cand = (scores.unsqueeze(2) + logp).view(B, width * V)  # (B, width*V)
    top_s, top_i = cand.topk(min(2 * K, width * V), dim=1)  # (B, 2K)
    beam, tok = top_i // V, top_i % V  # (B, 2K) x2
    eos = tok == EOS_ID  # (B, 2K)
    ok = eos[:, :K] & (top_s[:, :K] > NEG_INF) & ~finished  # (B, K) ends here, collected
    steps.ended[t] = top_s[:, :K].masked_fill(~ok, NEG_INF)
    steps.slot[t] = beam[:, :K]
    scores, keep_j = top_s.masked_fill(eos, NEG_INF).topk(K, dim=1)  # (B, K)
    return scores, beam.gather(1, keep_j), tok.gather(1, keep_j), ok


def _only_eos(V: int, device: torch.device) -> Tensor:
    """(1, 1, V) the scores of a step that may give ``</s>`` only."""
    only = torch.full((1, 1, V), NEG_INF, device=device)  # (1, 1, V)
    only[..., EOS_ID] = 0.0
    return only


@torch.no_grad()
def fixed_beam_search(
    model: DecodeModel[MemoryT, StateT], src: Tensor, src_len: Tensor, cfg: Search = Search(),
    keep_attention: bool = True, every: int = 8, prefix: Prefix | None = None,
) -> list[list[Hypothesis]]:  # fmt: skip
    """Translate a batch at a fixed shape; returns for each sentence its ``n_best`` hypotheses,
    best first, as :func:`~luong_lit.decoding.beam.beam_search` does. ``every``: steps between
    the host reads of whether every sentence is done. The first step runs on one row a
    sentence (its ``K`` slots would all be copies of it), every later step on ``K``."""
    B, K, S = src.size(0), cfg.beam, src.size(1)
    dev, keep_attention = src.device, keep_attention and model.has_attention
    memory, state = model.encode(src, src_len)
    max_len, min_len = cfg.bounds(src_len)  # (B,) x2
    T = most_steps(S, cfg)
    steps, done = Steps(T, B, K, keep_attention, max_len, min_len), _Done(cfg, B, dev)
    scores = torch.zeros((B, 1), device=dev)  # (B, width) live log-probabilities
    finished = torch.zeros((B, 1), dtype=torch.bool, device=dev)  # (B, 1) the sentence is done
    sent = torch.arange(B, device=dev)  # (B,)
    base = {1: sent.unsqueeze(1), K: sent.unsqueeze(1) * K}  # (B, 1) a sentence's first row
    y, only_eos = torch.full((B,), BOS_ID, dtype=torch.long, device=dev), None
    for t in range(T):
        logits, state, align = model.step(y, state, memory, t)
        (_, V), width = logits.shape, scores.size(1)
        if only_eos is None:
            cfg.check_vocabulary(V)
            only_eos = _only_eos(V, dev)
        logp = F.log_softmax(logits.float(), -1).view(B, width, V)  # (B, width, V)
        logp.select(2, EOS_ID).add_(steps.eos_bias[t])  # no </s> before min_len
        logp = torch.where(steps.forced[t], only_eos, logp)  # (B, width, V)
        logp = logp if prefix is None else prefix.restrict(logp, t, sent)
        a_t = align.dense(S).view(B, width, S) if keep_attention and align is not None else None
        scores, parent, word, ok = _choose(t, logp, scores, finished, steps, K)  # (B, K) x4
        steps.write(t, parent, word, a_t)
        now = done.update(ok, steps.ended[t], scores[:, 0])
        finished = finished | steps.forced[t, :, :, 0] | (False if now is None else now[:, None])
        if (t + 1) % every == 0 and bool(finished.all()):  # the one host read
            T = t + 1
            break
        if width == 1:  # each sentence's K slots from the second step on
            memory = memory.index_select(sent.repeat_interleave(K))
        state, y = state.index_select((parent + base[width]).view(-1)), word.view(-1)
    return _hypotheses(cfg, steps, T, B)
