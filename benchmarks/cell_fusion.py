"""Would a fused LSTM cell make training faster? Two fused cells against the library's own.

    LUONG_LIT_DATA=../shared/data python benchmarks/cell_fusion.py [--rows 64,40,7] \
        [--calls 300] [--rounds 3] [--threads N] [--steps 20 --skip 20] [--no-compile]

The candidates compute the same update (``tests/test_benchmarks.py`` checks values and
gradients against the library's cell):

* ``eager``: :func:`luong_lit.nn.lstm.lstm_cell`, nine operators forward (``chunk`` included),
  each recorded by autograd, whose backward then runs its own operators;
* ``function``: :class:`FusedCell`, one ``torch.autograd.Function`` with six arithmetic
  operators forward and a hand-written backward that writes the gate gradients into one
  ``(n, 4d)`` tensor;
* ``compiled``: ``torch.compile(lstm_cell, dynamic=True)`` (inductor: one generated C++
  kernel forward and one backward; the first call compiles, about 20 s).

Part 1 times one cell, forward and backward, per call (µs) at the given numbers of rows (64 is
the batch; rows leave as sentences end), in alternating rounds, median. Part 2 (``--steps``)
times whole ``m30k_small`` training steps (``ours_window.step_seconds``, the plain loop) with
each candidate in the encoder and the decoder, alternating, median ms per step.
"""
from __future__ import annotations

import argparse
import itertools
import statistics
import time

import torch
from torch import Tensor
from torch.autograd import Function

import luong_lit.nn.decoder as decoder_mod
import luong_lit.nn.lstm as lstm_mod
from luong_lit.runtime import configure_cpu

D = 256  # m30k_small's hidden size


class FusedCell(Function):
    """``lstm_cell`` (gates in i, f, g, o order) as one autograd node with its backward by hand."""

    @staticmethod
    def forward(ctx, gates: Tensor, c: Tensor) -> tuple[Tensor, Tensor]:
        d = c.size(1)
        act = torch.sigmoid(gates)  # (n, 4d); the g block is replaced by tanh below
        torch.tanh(gates[:, 2 * d:3 * d], out=act[:, 2 * d:3 * d])
        i, f, g, o = act.chunk(4, 1)  # (n, d) each
        c_new = torch.addcmul(f * c, i, g)  # (n, d)
        tanh_c = torch.tanh(c_new)
        ctx.save_for_backward(act, c, tanh_c)
        return o * tanh_c, c_new

    @staticmethod
    def backward(ctx, dh: Tensor, dc_next: Tensor) -> tuple[Tensor, Tensor]:
        act, c, tanh_c = ctx.saved_tensors
        d = c.size(1)
        i, f, g, o = act.chunk(4, 1)
        dc = (dh * o).mul_(1 - tanh_c * tanh_c).add_(dc_next)  # (n, d) through h = o tanh(c), and c
        up = torch.empty_like(act)  # (n, 4d) d loss / d activation, per gate
        for k, (a, b) in enumerate(((dc, g), (dc, c), (dc, i), (dh, tanh_c))):
            torch.mul(a, b, out=up[:, k * d:(k + 1) * d])
        slope = act * (1 - act)  # sigmoid'
        torch.sub(1, g * g, out=slope[:, 2 * d:3 * d])  # tanh' for the g block
        return up.mul_(slope), dc * f


def fused_cell(gates: Tensor, c: Tensor) -> tuple[Tensor, Tensor]:
    return FusedCell.apply(gates, c)


def candidates(compile_: bool) -> dict:
    cells = {"eager": lstm_mod.lstm_cell, "function": fused_cell}
    if compile_:
        cells["compiled"] = torch.compile(lstm_mod.lstm_cell, dynamic=True)
    return cells


def call_us(cell, n: int, calls: int) -> float:
    """Microseconds per forward and backward of ``cell`` on ``n`` rows."""
    gates, c = torch.randn(n, 4 * D, requires_grad=True), torch.randn(n, D, requires_grad=True)
    dh, dc = torch.randn(n, D), torch.randn(n, D)
    t0 = time.perf_counter()
    for _ in range(calls):
        torch.autograd.backward(cell(gates, c), [dh, dc])
    return (time.perf_counter() - t0) / calls * 1e6


def per_call(cells: dict, rows: list[int], args) -> None:
    for n in rows:
        for cell in cells.values():  # warm-up; compiles the dynamic-shape graphs
            call_us(cell, n, 20)
        times = {name: [] for name in cells}
        for _ in range(args.rounds):
            for name, cell in cells.items():
                times[name].append(call_us(cell, n, args.calls))
        print(f"{n} rows: " + ", ".join(f"{k} {statistics.median(v):.0f} µs" for k, v in times.items()))


def per_step(cells: dict, args) -> None:
    """Median ms per m30k_small training step with each cell, alternating rounds."""
    from early_learning import recipe_module
    from ours_window import step_seconds

    original = lstm_mod.lstm_cell
    dm, module = recipe_module(argparse.Namespace(chunk_batches=1))
    batches = list(itertools.islice(dm.train_dataloader(), args.skip + args.steps))
    times = {name: [] for name in cells}
    try:
        for _ in range(args.rounds):
            for name, cell in cells.items():
                lstm_mod.lstm_cell = decoder_mod.lstm_cell = cell
                times[name].append(step_seconds(module, batches, warmup=args.skip) * 1e3)
    finally:
        lstm_mod.lstm_cell = decoder_mod.lstm_cell = original
    tokens = sum(b.num_tgt_tokens for b in batches[args.skip:]) / args.steps
    print(f"training step ({tokens:.0f} target tokens): "
          + ", ".join(f"{k} {statistics.median(v):.0f} ms ({' / '.join(f'{x:.0f}' for x in v)})"
                      for k, v in times.items()))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", default="64,40,7")
    ap.add_argument("--calls", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--steps", type=int, default=0, help="also time N whole training steps")
    ap.add_argument("--skip", type=int, default=20, help="steps run before timing (warm-up)")
    ap.add_argument("--no-compile", dest="compile", action="store_false")
    args = ap.parse_args()
    configure_cpu(args.threads, True, True)
    torch.manual_seed(1234)
    cells = candidates(args.compile)
    per_call(cells, [int(n) for n in args.rows.split(",")], args)
    if args.steps:
        per_step(cells, args)
    print(f"threads: {torch.get_num_threads()}")


if __name__ == "__main__":
    main()
