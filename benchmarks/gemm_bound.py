"""How fast could a training step of m30k_small be if everything but its matrix products were free?

    LUONG_LIT_DATA=../shared/data python benchmarks/gemm_bound.py [--batches 20] [--skip 20] \
        [--chunk-batches 1|100] [--reps 5] [--top 10] [--threads 1] [--profile 15]
    LUONG_LIT_DATA=../shared/data python benchmarks/gemm_bound.py --decode RUN/checkpoints/best.ckpt

Runs real training steps (the current ``m30k_small`` config and its own batches, in the plain
loop of ``ours_window.py --plain``) and records every matrix product they issue, forward and
backward: ``mm`` and ``addmm`` (with their in-place and ``out=`` forms), ``bmm``, ``baddbmm``
and oneDNN's ``_linear_pointwise`` (the output layer). Each distinct product (operator, shapes,
strides, scalars) is then timed alone on random data of the same layout, best of ``--reps``
runs with warm caches, on the same threads. The sum over a step's products is the step's
*GEMM-only time*: a lower bound on any implementation that issues these products with this
library, since it charges nothing for the LSTM gates, the softmax, dropout, autograd, the
optimizer or data, and times every product at its best.

Prints, per step: target tokens, product FLOPs (2mnk), the measured step time (median over the
steps), the GEMM-only time, and the tokens/s each implies; with ``--top N`` the costliest kinds
of product; with ``--profile N`` the N costliest operators of the same steps (``torch.profiler``,
self CPU time); the library's rate on one large square product, for scale; and the time of the
same steps through the same model cut to width 8: the same operators over the same ragged
lengths with almost no arithmetic, i.e. what issuing them costs. ``--decode`` does the same for
beam-5 decoding of test_2016_flickr in batches of 30.
"""
from __future__ import annotations

import argparse
import itertools
import statistics
import time
from dataclasses import dataclass

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from early_learning import recipe_module
from luong_lit.runtime import configure_cpu
from ours_window import step_seconds

aten = torch.ops.aten
GEMMS = {aten.mm.default, aten.mm.out, aten.addmm.default, aten.addmm.out, aten.addmm_.default,
         aten.bmm.default, aten.bmm.out, aten.baddbmm.default, aten.baddbmm_.default, aten.baddbmm.out}
if hasattr(torch.ops, "mkldnn") and hasattr(torch.ops.mkldnn, "_linear_pointwise"):
    GEMMS.add(torch.ops.mkldnn._linear_pointwise.default)
TINY = 8  # embedding and hidden width of the model that measures the cost of issuing operators


def _sig(x):
    """A hashable description of one argument: tensors by layout, anything else by value."""
    if isinstance(x, torch.Tensor):
        return ("T", tuple(x.shape), tuple(x.stride()), x.dtype)
    if isinstance(x, (list, tuple)):
        return tuple(_sig(y) for y in x)
    return x


def operands(name: str, args) -> tuple:
    """The two factors ``(a, b)`` of a product's arguments (``b`` as (K, N) but for oneDNN's (N, K))."""
    if "linear_pointwise" in name:
        return args[0], args[1]
    return (args[1], args[2]) if ("addmm" in name or "baddbmm" in name) else (args[0], args[1])


def flops(func, args) -> int:
    """``2 m n k`` of one product (batched: times the batch)."""
    a, b = operands(str(func), args)
    return 2 * a.numel() * (b.size(0) if "linear_pointwise" in str(func) else b.size(-1))


@dataclass
class Call:
    """One distinct product: the operator, a sample of its arguments, how often, its FLOPs."""

    func: object
    args: tuple
    kwargs: dict
    count: int
    flops: int


class Recorder(TorchDispatchMode):
    """Counts every distinct matrix product issued while active (forward and backward)."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: dict[tuple, Call] = {}  # signature -> Call

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in GEMMS:
            key = (str(func), _sig(args), _sig(tuple(sorted(kwargs.items()))))
            self.calls.setdefault(key, Call(func, args, kwargs, 0, flops(func, args))).count += 1
        return func(*args, **kwargs)


def _like(x):
    """A fresh tensor with ``x``'s shape, strides and dtype, filled with small random values."""
    if not isinstance(x, torch.Tensor):
        return x
    size = 1 + sum((n - 1) * st for n, st in zip(x.shape, x.stride()) if n)  # storage it spans
    base = torch.empty(size, dtype=x.dtype).uniform_(-0.1, 0.1)
    return base.as_strided(x.shape, x.stride())  # overlapping (expanded) layouts too


def best_time(func, args, kwargs, reps: int) -> float:
    """Seconds of one call of ``func`` on fresh data of the recorded layout, best of ``reps``."""
    args = [_like(a) for a in args]
    kwargs = {k: _like(v) for k, v in kwargs.items()}
    func(*args, **kwargs)
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        func(*args, **kwargs)
        best = min(best, time.perf_counter() - t0)
    return best


def square_rate(n: int = 1024, reps: int = 5) -> float:
    """GFLOP/s of an ``n``-cubed fp32 product: the library's rate on a large, easy shape."""
    a, b = torch.randn(n, n), torch.randn(n, n)
    return 2 * n ** 3 / best_time(aten.mm.default, (a, b), {}, reps) / 1e9


def main() -> None:
    """Parse the options, then bound training steps or, with ``--decode``, beam search."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--batches", type=int, default=20, help="training steps recorded and timed")
    ap.add_argument("--skip", type=int, default=20, help="steps run first (warm-up)")
    ap.add_argument("--chunk-batches", type=int, default=1, help="data.chunk_batches (1: random batches)")
    ap.add_argument("--decode", metavar="CKPT", help="beam-5 decoding of test_2016_flickr (batch 30) instead")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's, all cores)")
    ap.add_argument("--top", type=int, default=0, help="also list the N costliest kinds of product")
    ap.add_argument("--profile", type=int, default=0, help="also list the N costliest operators (profiler)")
    args = ap.parse_args()
    configure_cpu(args.threads, True, True)
    torch.manual_seed(1234)
    (decode if args.decode else train)(args)
    print(f"large square product (1024^3): {square_rate():.0f} GFLOP/s")


def train(args) -> None:
    """The bound for training steps of ``m30k_small``, and the cost of issuing their operators."""
    dm, module = recipe_module(args)
    batches = list(itertools.islice(dm.train_dataloader(), args.skip + args.batches))
    measured = step_seconds(module, batches, warmup=args.skip)
    batches = batches[args.skip:]
    rec = Recorder()
    with rec:
        step_seconds(module, batches, warmup=0)
    n, tokens = len(batches), sum(b.num_tgt_tokens for b in batches)
    longest = statistics.mean(b.tgt_out.size(1) for b in batches)
    print(f"per step: {tokens / n:.0f} target tokens, longest target {longest:.1f}")
    report(rec, n, tokens / n, "target tokens", measured, args)
    if args.profile:
        profile_steps(module, batches, args.profile)
    _, tiny = recipe_module(args, [f"model.net.embed_size={TINY}", f"model.net.hidden_size={TINY}"])
    print(f"the same steps with every width {TINY}: {step_seconds(tiny, batches + batches, n) * 1e3:.0f} ms "
          "(issuing the step's operators: Python, dispatch, autograd)")


def profile_steps(module, batches, top: int) -> None:
    """The ``top`` operators of the steps over ``batches`` by self CPU time, per step."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        step_seconds(module, batches, warmup=0)
    events = sorted(prof.key_averages(), key=lambda e: -e.self_cpu_time_total)[:top]
    for e in events:
        print(f"  {e.self_cpu_time_total / 1e3 / len(batches):6.1f} ms in {e.count / len(batches):6.1f} calls  {e.key}")


def decode(args) -> None:
    """The bound for beam search over a test set: every product of the search, one pass."""
    from luong_lit.checkpoint import load_model
    from luong_lit.decoding.beam import BeamConfig
    from luong_lit.decoding.corpus import decode_corpus
    from luong_lit.evaluate import load_split

    net, src_vocab, tgt_vocab, meta = load_model(args.decode)
    src = load_split(meta, "test_2016_flickr", src_vocab, tgt_vocab).split.src_ids

    def run() -> None:
        decode_corpus(net, src, 30, BeamConfig(beam_size=5))

    run()
    t0 = time.perf_counter()
    run()
    measured = time.perf_counter() - t0
    rec = Recorder()
    with rec:
        run()
    report(rec, 1, len(src), "sentences", measured, args)


def kind(key: tuple) -> tuple[str, int]:
    """A product as ``op: {m} x K . K x N`` (batched: ``B x`` first), and its row count ``m``."""
    a, b = (sig[1] for sig in operands(key[0], key[1]))
    if "linear_pointwise" in key[0]:
        b = b[::-1]
    batch = f"{a[0]} x " if len(a) == 3 else ""
    return f"{key[0].split('.')[-2]}: {batch}{{m}} x {a[-1]} . {b[-2]} x {b[-1]}", a[-2]


def report(rec: Recorder, n: int, units: float, unit: str, measured: float, args) -> None:
    """Measured against GEMM-only time, per run of ``units`` ``unit`` (``n`` runs recorded)."""
    times = {key: best_time(c.func, c.args, c.kwargs, args.reps) * c.count / n for key, c in rec.calls.items()}
    gemm_s = sum(times.values())
    total_flops = sum(c.count * c.flops for c in rec.calls.values()) / n
    calls = sum(c.count for c in rec.calls.values()) / n
    print(f"{calls:.0f} matrix products ({len(rec.calls)} distinct layouts), {total_flops / 1e9:.2f} GFLOP "
          f"({total_flops / units / 1e6:.1f} MFLOP per {unit[:-1]})")
    print(f"measured:       {measured * 1e3:.0f} ms  -> {units / measured:.0f} {unit}/s "
          f"({total_flops / measured / 1e9:.0f} GFLOP/s)")
    print(f"GEMM-only time: {gemm_s * 1e3:.0f} ms  -> at most {units / gemm_s:.0f} {unit}/s "
          f"({total_flops / gemm_s / 1e9:.0f} GFLOP/s); products are at least {gemm_s / measured:.0%} of the time")
    by_kind: dict[str, list] = {}  # label -> [seconds, calls, row counts]
    for key, t in times.items():
        label, m = kind(key)
        acc = by_kind.setdefault(label, [0.0, 0.0, set()])
        acc[0], acc[1] = acc[0] + t, acc[1] + rec.calls[key].count / n
        acc[2].add(m)
    for label, (t, c, ms) in sorted(by_kind.items(), key=lambda kv: -kv[1][0])[: args.top]:
        rows = str(next(iter(ms))) if len(ms) == 1 else f"({min(ms)}..{max(ms)})"
        print(f"  {t * 1e3:6.1f} ms in {c:5.1f} calls  {label.format(m=rows)}")


if __name__ == "__main__":
    main()
