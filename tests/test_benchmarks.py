"""The product counter of ``benchmarks/gemm_bound.py`` against hand-counted FLOPs."""
from __future__ import annotations

import sys
from pathlib import Path

import torch
from torch.nn import functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import gemm_bound  # noqa: E402


def test_recorder_counts_forward_and_backward_products():
    n, k, m = 5, 7, 3
    x = torch.randn(n, k, requires_grad=True)
    W, b = torch.randn(m, k, requires_grad=True), torch.randn(m, requires_grad=True)
    rec = gemm_bound.Recorder()
    with rec:
        F.linear(x, W, b).sum().backward()
    calls = sum(c for *_, c, _ in rec.calls.values())
    total = sum(c * fl for *_, c, fl in rec.calls.values())
    assert calls == 3  # x W^T + b; d x = g W; d W = g^T x
    assert total == 3 * 2 * n * k * m
    kinds = sorted(gemm_bound.kind(key) for key in rec.calls)
    assert kinds == [("addmm: {m} x 7 . 7 x 3", n), ("mm: {m} x 3 . 3 x 7", n), ("mm: {m} x 5 . 5 x 7", m)]


def test_batched_product_flops_and_replay():
    a, b = torch.randn(4, 2, 6), torch.randn(4, 6, 5)
    rec = gemm_bound.Recorder()
    with rec:
        torch.bmm(a, b)
    [(func, args, kwargs, count, fl)] = rec.calls.values()
    assert (count, fl) == (1, 2 * 4 * 2 * 6 * 5)
    assert gemm_bound.best_time(func, args, kwargs, reps=2) > 0.0
