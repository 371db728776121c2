"""What a fixed-shape beam search (:mod:`luong_lit.decoding.fixed`) writes at each step and reads
back at its end: preallocated ``(T, B, K)`` buffers (:class:`Steps`) indexed by the step, a
host int or a tensor on the device (:data:`At`), and the hypotheses read from them with one
host read (:func:`hypotheses`)."""

from __future__ import annotations

import torch
from torch import Tensor

from luong_lit.decoding.search import NEG_INF, BeamSearch, Hypothesis

#: a step's index into the per-step buffers: a host int (a view, no operator) or, in a captured
#: chunk of steps, a (1,) long tensor on the device
At = int | Tensor


def row(table: Tensor, at: At) -> Tensor:
    """Row ``at`` of a per-step table, without its step axis."""
    return table[at] if isinstance(at, int) else table.index_select(0, at).squeeze(0)


def put(table: Tensor, at: At, value: Tensor) -> None:
    """``value`` into row ``at`` of a per-step buffer."""
    if isinstance(at, int):
        table[at] = value
    else:
        table.index_copy_(0, at, value.unsqueeze(0))


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

    def write(self, at: At, kept: Tensor, a_t: Tensor | None) -> None:
        """Step ``at``'s choices (B, K) and ``a_t`` (B, width, S)."""
        put(self.kept, at, kept)
        if self.keep_attention and a_t is not None:
            if self.a is None:
                self.a = a_t.new_zeros((*self.kept.shape, a_t.size(-1)))  # (T, B, K, S)
            put(self.a, at, a_t.expand(-1, self.kept.size(2), -1))  # step 0's one slot to all

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


def hypotheses(cfg: BeamSearch, steps: Steps, T: int, B: int) -> list[list[Hypothesis]]:
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
