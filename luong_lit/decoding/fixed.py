"""Beam search at a fixed shape: every tensor of a step after the first has one shape at every
step, and nothing is read on the host but one flag every ``every`` steps.

The first step runs on one row a sentence (its ``K`` slots would all be copies of it; running
it on ``K`` rows scored ``[0, −inf, …]`` changes the last bits of the a_t products), every later
step on ``B·K`` rows; no row is ever dropped, a sentence that is done carries a flag that its
later candidates are not collected by, and what each step chose is written into buffers made
once for the longest output a batch of this source width may have
(:class:`~luong_lit.decoding.fixed_steps.Steps`), at the step's index. What it finds equals
:func:`~luong_lit.decoding.beam.beam_search`'s, which drops
the finished sentences from the batch (``tests/test_decoding_fixed.py`` compares them in
float64): the same hypotheses, raw and ranking scores and n-best order, attention to 1e-12,
with length penalties, length bounds, the authors' stack rule, prefixes and ensembles. From the
second step on, a step's operators do not depend on the batch's progress (the same test).

In chunks (``chunks``): after the first ``every`` steps, each chunk of ``every`` steps runs on
the same tensors, its step's index counted on the device and its end copied into its start, so
that one CUDA graph of a chunk, captured once a batch, replays every later chunk
(:func:`cuda_graph`; ``translate --cuda-graphs``). On the CPU the same chunks run as they are
(:func:`as_is`): the tests find what the shrinking search finds and a chunk that reads nothing
on the host; the captured form is compared with the eager one on a GPU
(``tests/test_gpu.py``), and it is off by default until measured there.

The options and the result type are :mod:`luong_lit.decoding.search`'s.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any, NamedTuple

import torch
from torch import Tensor
from torch.nn import functional as F

from luong_lit.data.vocab import BOS_ID, EOS_ID
from luong_lit.decoding.fixed_steps import At, Steps, hypotheses, put, row
from luong_lit.decoding.prefix import Prefix
from luong_lit.decoding.search import NEG_INF, BeamSearch, Hypothesis
from luong_lit.nn.interface import DecodeModel, MemoryT, StateT


def most_steps(S: int, cfg: BeamSearch) -> int:
    """The steps a batch of source width ``S`` may take (its longest output and its ``</s>``),
    a host value known before the search: no sentence is longer than its batch's width."""
    longest, _ = cfg.bounds(torch.tensor([S]))  # (1,) x2
    return max(int(longest[0]), 0) + 1


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
        if self.n == 1:  # in place: a captured chunk of steps replays on the same tensors
            torch.maximum(self.best, ended.amax(1, keepdim=True), out=self.best)
        else:
            self.best.copy_(torch.cat([self.best, ended], 1).topk(self.n).values)
        nth = self.best[:, -1]  # (B,)
        return best_live > nth  # nothing found: on while a live one is finite


def _choose(
    at: At, logp: Tensor, scores: Tensor, live: Tensor, steps: Steps, K: int
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """Step ``at``'s choice from ``logp`` (B, width, V) and the live ``scores`` (B, width):
    the ``</s>`` candidates among the best ``K`` are written to ``steps`` (those of a sentence
    still ``live`` (B, 1)), the best ``K`` others stay live. Returns their scores and their
    indices ``parent · V + word`` (B, K), which candidates ended here and their raw scores
    (−inf: none) (B, K)."""
    B, width, V = logp.shape
    cand = (scores.unsqueeze(2) + logp).view(B, width * V)  # (B, width*V)
    top_s, top_i = cand.topk(min(2 * K, width * V), dim=1)  # (B, 2K)
    eos = top_i % V == EOS_ID  # (B, 2K)
    ok = eos[:, :K] & (top_s[:, :K] > NEG_INF) & live  # (B, K) ends here, collected
    ended = torch.where(ok, top_s[:, :K], steps.none)  # (B, K)
    put(steps.ended, at, ended)
    put(steps.left, at, top_i[:, :K])
    scores, keep_j = top_s.masked_fill(eos, NEG_INF).topk(K, dim=1)  # (B, K)
    return scores, top_i.gather(1, keep_j), ok, ended


def _only_eos(V: int, device: torch.device) -> Tensor:
    """(1, 1, V) the scores of a step that may give ``</s>`` only."""
    only = torch.full((1, 1, V), NEG_INF, device=device)  # (1, 1, V)
    only[..., EOS_ID] = 0.0
    return only


class Carry(NamedTuple):
    """What a search carries from one step to the next: the words entering it ``y`` (rows,),
    the decoder's ``state``, the live ``scores`` (B, width) and whether each sentence goes on
    ``live`` (B, 1), and, for a captured chunk of steps, the step's index ``t``: a () long
    tensor on the device, which counts the steps there."""

    y: Tensor
    state: Any
    scores: Tensor
    live: Tensor
    t: Tensor


def _leaves(x: Any) -> list[Tensor]:
    """The tensors of a carry or a decoder state (tuples of tuples of tensors), in order."""
    if isinstance(x, Tensor):
        return [x]
    return [leaf for part in x for leaf in _leaves(part)]


class _Stepper:
    """One step of the search on a :class:`Carry`: the same operators at every step from the
    second on, none that reads the host, and every tensor it keeps across steps updated in
    place. Eagerly the step's index is a host int (rows of the buffers are views); in a
    captured chunk it is the carry's ``t`` on the device (:data:`At`), which a CUDA graph of
    a chunk of steps needs."""

    def __init__(self, model: DecodeModel[MemoryT, StateT], memory: MemoryT, cfg: BeamSearch,
                 steps: Steps, done: _Done, keep_attention: bool, prefix: Prefix | None,
                 S: int) -> None:  # fmt: skip
        self.model, self.memory, self.cfg, self.steps, self.done = model, memory, cfg, steps, done
        self.keep_attention, self.prefix, self.S = keep_attention, prefix, S
        self.only_eos: Tensor | None = None
        self.sent = torch.arange(steps.kept.size(1), device=steps.kept.device)  # (B,)
        first = self.sent.unsqueeze(1)  # (B, 1) a sentence's first row, at width 1 and K
        self.first_row = {1: first, cfg.beam: first * cfg.beam}

    def __call__(self, c: Carry, t: int | None) -> Carry:
        """Step ``t`` on the host; in a captured chunk (``t`` None) the carry's ``t`` on the
        device, counted there."""
        steps, B, width, K = self.steps, c.scores.size(0), c.scores.size(1), self.cfg.beam
        index = c.t if t is None else t  # the model's and (as a row) the buffers' step
        at = index.view(1) if isinstance(index, Tensor) else index
        logits, state, align = self.model.step(c.y, c.state, self.memory, index)
        V = logits.size(1)
        if self.only_eos is None:  # the first step: the vocabulary is known
            self.cfg.check_vocabulary(V)
            self.only_eos, steps.V = _only_eos(V, logits.device), V
        logp = F.log_softmax(logits.float(), -1).view(B, width, V)  # (B, width, V)
        if steps.eos_bias is not None:  # no </s> before min_len
            logp.select(2, EOS_ID).add_(row(steps.eos_bias, at))
        logp = torch.where(row(steps.forced, at), self.only_eos, logp)  # (B, width, V)
        if self.prefix is not None:
            assert t is not None  # a prefix is read at a host step: never captured
            logp = self.prefix.restrict(logp, t, self.sent)
        a_t = None
        if self.keep_attention and align is not None:
            a_t = align.dense(self.S).view(B, width, self.S)  # (B, width, S)
        scores, kept, ok, ended = _choose(at, logp, c.scores, c.live, steps, K)  # (B, K) x4
        steps.write(at, kept, a_t)
        still = self.done.update(ok, ended, scores[:, 0])  # (B,) or None
        live = c.live & row(steps.unforced, at)  # (B, 1)
        if still is not None:
            live = live & still[:, None]
        if width == 1:  # each sentence's K slots from the second step on
            self.memory = self.memory.index_select(self.sent.repeat_interleave(K))
        parent, y = kept // V, (kept % V).view(-1)  # (B, K), (B*K,)
        state = state.index_select((parent + self.first_row[width]).view(-1))
        return Carry(y, state, scores, live, c.t + 1 if t is None else c.t)


#: how a chunk of steps is run again and again: given the function that runs one chunk on the
#: carry's tensors, the function each later chunk calls (:func:`cuda_graph`, :func:`as_is`)
Chunks = Callable[[Callable[[], None]], Callable[[], None]]


def cuda_graph(chunk: Callable[[], None]) -> Callable[[], None]:
    """The chunk captured once as a CUDA graph on the current device (the search's,
    :func:`_in_chunks`), on a stream of that device: each call replays it."""
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=torch.cuda.Stream()):  # type: ignore[no-untyped-call]
        chunk()
    return graph.replay


def as_is(chunk: Callable[[], None]) -> Callable[[], None]:
    """The chunk itself, run eagerly at each call on any device: what a graph's replay does."""
    return chunk


@torch.no_grad()
def fixed_beam_search(
    model: DecodeModel[MemoryT, StateT], src: Tensor, src_len: Tensor,
    cfg: BeamSearch = BeamSearch(), keep_attention: bool = True,
    every: int = 8, prefix: Prefix | None = None, chunks: Chunks | None = None,
) -> list[list[Hypothesis]]:  # fmt: skip
    """Translate a batch at a fixed shape; returns for each sentence its ``n_best`` hypotheses,
    best first, as :func:`~luong_lit.decoding.beam.beam_search` does. ``every``: steps between
    the host reads of whether every sentence is done. The first step runs on one row a
    sentence (its ``K`` slots would all be copies of it), every later step on ``K``.
    ``chunks`` (no prefix): after the first ``every`` steps, each chunk of ``every`` steps is
    run by what ``chunks`` makes of one (:func:`cuda_graph`: captured once, replayed)."""
    B, K, S, dev = src.size(0), cfg.beam, src.size(1), src.device
    keep_attention = keep_attention and model.has_attention
    memory, state = model.encode(src, src_len)
    max_len, min_len = cfg.bounds(src_len)  # (B,) x2
    T = most_steps(S, cfg)
    chunks = chunks if prefix is None else None  # a prefix is read at host steps
    rows = T if chunks is None else max(every, -(-T // every) * every)  # whole chunks
    steps = Steps(rows, B, K, keep_attention, max_len, min_len, cfg.min_len_ratio)
    step = _Stepper(model, memory, cfg, steps, _Done(cfg, B, dev), keep_attention, prefix, S)
    c = Carry(torch.full((B,), BOS_ID, dtype=torch.long, device=dev), state,
              torch.zeros((B, 1), device=dev), torch.ones((B, 1), dtype=torch.bool, device=dev),
              torch.zeros((), dtype=torch.long, device=dev))  # fmt: skip
    if chunks is not None:  # a CUDA device's streams and graph are made on it, current
        with torch.cuda.device(dev) if dev.type == "cuda" else contextlib.nullcontext():
            return hypotheses(cfg, steps, _in_chunks(step, c, T, every, chunks), B)
    for t in range(T):
        c = step(c, t)
        if (t + 1) % every == 0 and not bool(c.live.any()):  # the one host read
            T = t + 1
            break
    return hypotheses(cfg, steps, T, B)


def _in_chunks(step: _Stepper, c: Carry, T: int, every: int, chunks: Chunks) -> int:
    """Steps ``0 … every-1`` run eagerly (on a CUDA device on a side stream: the warm-up a
    capture needs), then chunks of ``every`` steps, each on the carry's tensors and counting
    its steps on the device (its end copied into them: the next chunk's start), made once by
    ``chunks`` and run until every sentence is done or ``T`` steps are run: one host read a
    chunk. Returns the steps run. The search's device is current (on another, a capture
    would record nothing)."""
    side = torch.cuda.Stream() if c.t.device.type == "cuda" else None  # type: ignore[no-untyped-call]
    if side is not None:
        side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side) if side is not None else contextlib.nullcontext():
        for t in range(every):
            c = step(c, t)
    if side is not None:
        torch.cuda.current_stream().wait_stream(side)
    run = every
    if run >= T or not bool(c.live.any()):
        return run
    c.t.fill_(every)  # from here the device counts the steps

    def chunk() -> None:
        out = c
        for _ in range(every):
            out = step(out, None)
        for mine, new in zip(_leaves(c), _leaves(out), strict=True):
            mine.copy_(new)  # the chunk's end is the next one's start

    again = chunks(chunk)
    while run < T:
        again()
        run += every
        if not bool(c.live.any()):  # the one host read a chunk
            break
    return run
