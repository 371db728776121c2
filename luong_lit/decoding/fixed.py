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
from luong_lit.decoding.search import BeamSearch, Hypothesis
from luong_lit.nn.interface import DecodeModel, MemoryT, StateT

NEG_INF = float("-inf")


def most_steps(S: int, cfg: BeamSearch) -> int:
    """The steps a batch of source width ``S`` may take (its longest output and its ``</s>``),
    a host value known before the search: no sentence is longer than its batch's width."""
    longest, _ = cfg.bounds(torch.tensor([S]))  # (1,) x2
    return max(int(longest[0]), 0) + 1


class Steps:
    """Per step ``t`` (rows of preallocated ``(T, B, K)`` buffers): each live slot's choice
    after the step as one index ``parent · V + word`` into the step's ``(width, V)``
    candidates, the ``a_t`` of the slots entering it, and the raw score (−inf: none) and the
    index of each candidate that ended there in ``</s>``; the length bounds as tables read at
    ``t``. One write a buffer a step; parents and words are split once, when they are read."""

    def __init__(
        self, T: int, B: int, K: int, keep_attention: bool, max_len: Tensor, min_len: Tensor,
        min_len_ratio: float,
    ):  # fmt: skip
        dev, long = max_len.device, torch.long
        self.kept = torch.zeros((T, B, K), dtype=long, device=dev)  # parent · V + word
        self.ended = torch.full((T, B, K), NEG_INF, device=dev)  # raw score of a </s> candidate
        self.left = torch.zeros((T, B, K), dtype=long, device=dev)  # its slot · V + </s>
        self.a: Tensor | None = None  # (T, B, K, S) a_t, made at the first step that has one
        self.keep_attention, self.V = keep_attention, 1
        self.none = torch.tensor(NEG_INF, device=dev)  # the score of no candidate
        t = torch.arange(T, device=dev).unsqueeze(1)  # (T, 1)
        self.eos_bias: Tensor | None = None  # (T, B, 1) -inf: no </s> before min_len
        if min_len_ratio > 0:  # else min_len is 0 everywhere: nothing to add
            self.eos_bias = torch.zeros((T, B, 1), device=dev)
            self.eos_bias.masked_fill_((t < min_len).unsqueeze(2), NEG_INF)
        self.forced = (t >= max_len).view(T, B, 1, 1)  # only </s> from max_len on
        self.unforced = ~self.forced.view(T, B, 1)  # (T, B, 1)

    def write(self, t: int, kept: Tensor, a_t: Tensor | None) -> None:
        self.kept[t] = kept  # (B, K)
        if self.keep_attention and a_t is not None:
            if self.a is None:
                self.a = a_t.new_zeros((*self.kept.shape, a_t.size(-1)))  # (T, B, K, S)
            self.a[t] = a_t  # (B, width, S), the first step's one slot to every slot

    def read(self, sent: Tensor, end: Tensor, slot: Tensor) -> tuple[Tensor, Tensor | None]:
        """The words (E, T) and attention (E, T, S) of ``E`` hypotheses, each of sentence
        ``sent`` ending at step ``end`` from live slot ``slot`` (words past ``end - 1`` and
        attention rows past ``end`` zero), walking the parents back from each one's end: the
        ``r``-th step back reads step ``end - 1 - r`` (clamped at 0 past the first, then
        dropped)."""
        T = self.kept.size(0)
        parent, word = self.kept // self.V, self.kept % self.V  # (T, B, K) x2
        r = torch.arange(T, device=sent.device).unsqueeze(1)  # (T, 1)
        at = (end.unsqueeze(0) - 1 - r).clamp(min=0)  # (T, E) the step read r steps back
        k, back, rows = slot, [], []  # k: the slot entering the step read next
        if self.a is not None:
            rows.append(self.a[end, sent, k])  # (E, S) step end's
        for s in at:  # (E,) a step per hypothesis
            back.append(word[s, sent, k])  # (E,)
            k = parent[s, sent, k]  # (E,) the slot entering step s
            if self.a is not None:
                rows.append(self.a[s, sent, k])  # (E, S)
        pos = torch.arange(T, device=sent.device).unsqueeze(0)  # (1, T)
        inside = pos < end.unsqueeze(1)  # (E, T)
        since = (end.unsqueeze(1) - 1 - pos).clamp(min=0)  # (E, T) the r of each position
        words = torch.stack(back, 1).gather(1, since) * inside  # (E, T)
        if self.a is None:
            return words, None
        A = torch.stack(rows, 1)  # (E, T + 1, S) r = -1, 0, …
        q = (end.unsqueeze(1) - pos).clamp(min=0)  # (E, T) index into A of each position
        att = A.gather(1, q.unsqueeze(2).expand(-1, -1, A.size(2)))  # (E, T, S)
        return words, att * (pos <= end.unsqueeze(1)).unsqueeze(2)


def _divisors(cfg: BeamSearch, T: int, device: torch.device) -> Tensor | None:
    """(T, 1, 1) what a raw score ending at step ``t`` (``t`` words and ``</s>``) is divided by
    to rank it (:meth:`BeamSearch.divisor`); None for raw scores."""
    if cfg.length_penalty is None:
        return None
    div = [cfg.divisor(t + 1) for t in range(T)]  # host floats, as BeamSearch.normalise's
    return torch.tensor(div, dtype=torch.float64, device=device).view(T, 1, 1)


def _ranked(cfg: BeamSearch, steps: Steps, T: int) -> tuple[Tensor, Tensor, Tensor, Tensor, Tensor]:
    """Each sentence's ``n_best`` best finished candidates by the score they are ranked by,
    the first found first among equals, ``n_best`` a sentence in order (−inf where it found
    fewer): their sentence, step, slot, raw score and ranking score, (B·n_best,) each."""
    raw = steps.ended[:T].double()  # (T, B, K)
    div = _divisors(cfg, T, raw.device)
    norm = raw if div is None else raw / div  # (T, B, K)
    B, K = raw.size(1), raw.size(2)
    flat = norm.permute(1, 0, 2).reshape(B, T * K)  # (B, T*K) in the order they were found
    order = flat.sort(dim=1, descending=True, stable=True).indices[:, : cfg.n_best]  # (B, n)
    sent = torch.arange(B, device=raw.device).repeat_interleave(order.size(1))  # (E,)
    at = order.reshape(-1)  # (E,) index into T*K
    end, k = at // K, at % K  # (E,) x2
    slot = steps.left[end, sent, k] // steps.V  # (E,)
    return sent, end, slot, raw[end, sent, k], norm[end, sent, k]


def _hypotheses(cfg: BeamSearch, steps: Steps, T: int, B: int) -> list[list[Hypothesis]]:
    """The hypotheses found, read on the host at once: one ``tolist`` of one float64 table
    (ids below 2**53 and float32 scores are exact there); attention stays where it is."""
    sent, end, slot, raw, norm = _ranked(cfg, steps, T)
    n = end.numel() // B  # n_best a sentence
    words, att = steps.read(sent, end, slot)  # (E, T), (E, T, S) or None
    table = torch.cat([torch.stack([end.double(), raw, norm], 1), words.double()], 1)
    out: list[list[Hypothesis]] = [[] for _ in range(B)]
    for e, (stop, score, ranked, *ids) in enumerate(table.tolist()):  # the one host read
        if score > NEG_INF:
            m = int(stop)
            a = None if att is None else att[e, : m + 1]
            out[e // n].append(Hypothesis([int(i) for i in ids[:m]], score, a, ranked))
    return out


class _Done:
    """Whether each sentence may still find what it keeps (B,), from what it found so far:
    it may not once ``stack_size`` are found, or (raw scores) once ``n_best`` are found none of
    which its best live hypothesis can still beat (the ``n_best``-th best found is finite)."""

    def __init__(self, cfg: BeamSearch, B: int, device: torch.device) -> None:
        self.cfg, self.n = cfg, cfg.n_best
        self.count = torch.zeros(B, dtype=torch.long, device=device)  # found so far
        self.best = torch.full((B, self.n), NEG_INF, device=device)  # the n best raw scores

    def update(self, ok: Tensor, ended: Tensor, best_live: Tensor) -> Tensor | None:
        """(B,) true where the sentence goes on; None where only its length ends it."""
        if self.cfg.stack_size is not None:
            self.count += ok.sum(1)
            return self.count < self.cfg.stack_size
        if self.cfg.length_penalty is not None:  # normalised scores can still rise
            return None
        if self.n == 1:
            self.best = torch.maximum(self.best, ended.amax(1, keepdim=True))
        else:
            self.best = torch.cat([self.best, ended], 1).topk(self.n).values
        nth = self.best[:, -1]  # (B,)
        return best_live > nth  # nothing found: on while a live one is finite


def _choose(
    t: int, logp: Tensor, scores: Tensor, live: Tensor, steps: Steps, K: int
) -> tuple[Tensor, Tensor, Tensor]:
    """Step ``t``'s choice from ``logp`` (B, width, V) and the live ``scores`` (B, width): the
    ``</s>`` candidates among the best ``K`` are written to ``steps`` (those of a sentence still
    ``live`` (B, 1)), the best ``K`` others stay live. Returns their scores and their indices
    ``parent · V + word`` (B, K), and which candidates ended here (B, K)."""
    B, width, V = logp.shape
    cand = (scores.unsqueeze(2) + logp).view(B, width * V)  # (B, width*V)
    top_s, top_i = cand.topk(min(2 * K, width * V), dim=1)  # (B, 2K)
    eos = top_i % V == EOS_ID  # (B, 2K)
    ok = eos[:, :K] & (top_s[:, :K] > NEG_INF) & live  # (B, K) ends here, collected
    steps.ended[t] = torch.where(ok, top_s[:, :K], steps.none)
    steps.left[t] = top_i[:, :K]
    scores, keep_j = top_s.masked_fill(eos, NEG_INF).topk(K, dim=1)  # (B, K)
    return scores, top_i.gather(1, keep_j), ok


def _only_eos(V: int, device: torch.device) -> Tensor:
    """(1, 1, V) the scores of a step that may give ``</s>`` only."""
    only = torch.full((1, 1, V), NEG_INF, device=device)  # (1, 1, V)
    only[..., EOS_ID] = 0.0
    return only


@torch.no_grad()
def fixed_beam_search(
    model: DecodeModel[MemoryT, StateT], src: Tensor, src_len: Tensor,
    cfg: BeamSearch = BeamSearch(), keep_attention: bool = True,
    every: int = 8, prefix: Prefix | None = None,
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
    steps = Steps(T, B, K, keep_attention, max_len, min_len, cfg.min_len_ratio)
    done = _Done(cfg, B, dev)
    scores = torch.zeros((B, 1), device=dev)  # (B, width) live log-probabilities
    live = torch.ones((B, 1), dtype=torch.bool, device=dev)  # (B, 1) the sentence goes on
    sent = torch.arange(B, device=dev)  # (B,)
    base = {1: sent.unsqueeze(1), K: sent.unsqueeze(1) * K}  # (B, 1) a sentence's first row
    y, only_eos = torch.full((B,), BOS_ID, dtype=torch.long, device=dev), None
    for t in range(T):
        logits, state, align = model.step(y, state, memory, t)
        (_, V), width = logits.shape, scores.size(1)
        if only_eos is None:
            cfg.check_vocabulary(V)
            only_eos, steps.V = _only_eos(V, dev), V
        logp = F.log_softmax(logits.float(), -1).view(B, width, V)  # (B, width, V)
        if steps.eos_bias is not None:  # no </s> before min_len
            logp.select(2, EOS_ID).add_(steps.eos_bias[t])
        logp = torch.where(steps.forced[t], only_eos, logp)  # (B, width, V)
        logp = logp if prefix is None else prefix.restrict(logp, t, sent)
        a_t = align.dense(S).view(B, width, S) if keep_attention and align is not None else None
        scores, kept, ok = _choose(t, logp, scores, live, steps, K)  # (B, K) x3
        steps.write(t, kept, a_t)
        still = done.update(ok, steps.ended[t], scores[:, 0])  # (B,) or None
        live = live & steps.unforced[t]  # (B, 1)
        if still is not None:
            live = live & still[:, None]
        if (t + 1) % every == 0 and not bool(live.any()):  # the one host read
            T = t + 1
            break
        if width == 1:  # each sentence's K slots from the second step on
            memory = memory.index_select(sent.repeat_interleave(K))
        parent, y = kept // V, (kept % V).view(-1)  # (B, K), (B*K,)
        state = state.index_select((parent + base[width]).view(-1))
    return _hypotheses(cfg, steps, T, B)
