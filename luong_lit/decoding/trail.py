"""Beam search's bookkeeping in device tensors: what each step chose (:class:`Trail`) and each
sentence's best finished hypotheses so far (:class:`FinishedHypotheses`). Nothing here reads a
value on the host until :meth:`FinishedHypotheses.hypotheses`, once a batch is searched."""

from __future__ import annotations

import torch
from torch import Tensor

from luong_lit.data.vocab import EOS_ID
from luong_lit.decoding.search import NEG_INF, BeamSearch, Hypothesis


class Trail:
    """Per step: the sentence of each batch row, and for each live slot after the step its
    parent slot (``src_beam``) and word, with the step's ``a_t`` of every slot before it. A
    hypothesis is read back by walking the parents from its last step."""

    def __init__(self, keep_attention: bool) -> None:
        self.keep_attention = keep_attention
        self.rows: list[Tensor] = []  # per step (B_t,) sentence of each row
        self.parent: list[Tensor] = []  # (B_t, K) slot before the step
        self.word: list[Tensor] = []  # (B_t, K) word chosen at the step
        self.a: list[Tensor] = []  # (B_t, width_t, S) a_t of the slots entering the step

    def add(self, rows: Tensor, parent: Tensor, word: Tensor, a_t: Tensor | None) -> None:
        self.rows.append(rows)
        self.parent.append(parent)
        self.word.append(word)
        if self.keep_attention and a_t is not None:
            self.a.append(a_t)

    def read(
        self, sent: Tensor, end: Tensor, slot: Tensor, n_sent: int
    ) -> tuple[Tensor, Tensor | None]:
        """The words (E, T) and attention (E, T, S) of ``E`` hypotheses, each of sentence
        ``sent`` ending at step ``end`` in live slot ``slot`` (its ``</s>`` step's ``a_t`` at
        row ``end``; words past ``end - 1`` and rows past ``end`` are zero)."""
        E, T = sent.numel(), len(self.rows)
        words = torch.zeros(E, T, dtype=torch.long, device=sent.device)  # (E, T)
        att = None
        if self.keep_attention:
            att = self.a[0].new_zeros(E, T, self.a[0].size(-1))  # (E, T, S)
        k = slot.clone()  # (E,) the slot entering step s+1
        for s in reversed(range(T)):
            where = torch.full((n_sent,), -1, dtype=torch.long, device=sent.device)
            where[self.rows[s]] = torch.arange(self.rows[s].numel(), device=sent.device)
            r = where[sent].clamp(min=0)  # (E,) each sentence's row at step s
            at_end, inside = end == s, end > s  # (E,) x2
            p = self.parent[s][r, k.clamp(max=self.parent[s].size(1) - 1)]  # (E,)
            words[:, s] = torch.where(
                inside, self.word[s][r, k.clamp(max=self.word[s].size(1) - 1)], 0
            )
            if att is not None:
                a = self.a[s]  # (B_s, width_s, S)
                here = a[r, torch.where(inside, p, k).clamp(max=a.size(1) - 1)]  # (E, S)
                att[:, s] = torch.where((at_end | inside).unsqueeze(1), here, 0.0)
            k = torch.where(inside, p, k)
        return words, att


class FinishedHypotheses:
    """Each sentence's ``n_best`` best finished hypotheses so far, best first by the score they
    are ranked by (stable: of equal ones, the first found first), and how many it found."""

    def __init__(self, B: int, cfg: BeamSearch, device: torch.device) -> None:
        n, f64 = cfg.n_best, torch.float64
        self.cfg = cfg
        self.norm = torch.full((B, n), NEG_INF, dtype=f64, device=device)  # ranked by
        self.score = torch.full((B, n), NEG_INF, dtype=f64, device=device)  # raw log-prob
        self.end = torch.zeros((B, n), dtype=torch.long, device=device)  # step of its </s>
        self.slot = torch.zeros((B, n), dtype=torch.long, device=device)  # live slot it left
        self.count = torch.zeros(B, dtype=torch.long, device=device)  # found so far

    def collect(self, t: int, rows: Tensor, top_s: Tensor, beam: Tensor, tok: Tensor,
                done: Tensor) -> None:  # fmt: skip
        """Step ``t``'s best ``K`` candidates (B, K) that end in ``</s>``, of the sentences
        ``rows`` not yet done, merged into their buffers."""
        ok = (tok == EOS_ID) & (top_s > NEG_INF) & ~done.unsqueeze(1)  # (B, K)
        score = top_s.double().masked_fill(~ok, NEG_INF)  # (B, K)
        norm = self.cfg.normalise(score, t + 1).masked_fill(~ok, NEG_INF)  # its t words + </s>
        merged = torch.cat([self.norm[rows], norm], 1)  # (B, n + K)
        order = merged.sort(dim=1, descending=True, stable=True).indices[:, : self.norm.size(1)]
        self.norm[rows] = merged.gather(1, order)
        self.score[rows] = torch.cat([self.score[rows], score], 1).gather(1, order)
        self.end[rows] = torch.cat([self.end[rows], torch.full_like(beam, t)], 1).gather(1, order)
        self.slot[rows] = torch.cat([self.slot[rows], beam], 1).gather(1, order)
        self.count[rows] += ok.sum(1)

    def done(self, rows: Tensor, best_live: Tensor) -> Tensor:
        """(B,) whether each sentence of ``rows`` is done, ``best_live`` (B,) its best live
        log-probability: ``stack_size`` found, or (raw scores) ``n_best`` found none of which the
        best live hypothesis can still beat."""
        count, cfg = self.count[rows], self.cfg
        if cfg.stack_size is not None:
            return count >= cfg.stack_size
        if cfg.length_penalty is not None:  # normalised scores can still rise: keep searching
            return torch.zeros_like(count, dtype=torch.bool)
        kth = self.score[rows, cfg.n_best - 1]  # (B,) the n_best-th best raw score
        return (count >= cfg.n_best) & (best_live.double() <= kth)

    def hypotheses(self, trail: Trail, src_len: Tensor) -> list[list[Hypothesis]]:
        """Each sentence's hypotheses, best first, read back from ``trail``."""
        sent, j = (self.norm > NEG_INF).nonzero(as_tuple=True)  # (E,) x2
        end, slot = self.end[sent, j], self.slot[sent, j]  # (E,) x2
        words, att = trail.read(sent, end, slot, self.norm.size(0))
        out: list[list[Hypothesis]] = [[] for _ in range(self.norm.size(0))]
        rows = zip(sent.tolist(), end.tolist(), words.tolist(), self.score[sent, j].tolist(),
                   self.norm[sent, j].tolist())  # fmt: skip
        for e, (b, n, ids, score, norm) in enumerate(rows):
            steps = att[e, : n + 1] if att is not None else None  # (n + 1, S)
            out[b].append(Hypothesis(ids[:n], score, steps, norm))
        return out
