"""The product counter of ``benchmarks/gemm_bound.py`` against hand-counted FLOPs."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch
from torch.nn import functional as F

from luong_lit.nn.loss import linear_cross_entropy

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import gemm_bound  # noqa: E402


def _totals(rec) -> tuple[int, int]:
    return sum(c.count for c in rec.calls.values()), sum(c.count * c.flops for c in rec.calls.values())


def test_recorder_counts_forward_and_backward_products():
    n, k, m = 5, 7, 3
    x = torch.randn(n, k, requires_grad=True)
    W, b = torch.randn(m, k, requires_grad=True), torch.randn(m, requires_grad=True)
    rec = gemm_bound.Recorder()
    with rec:
        F.linear(x, W, b).sum().backward()
    assert _totals(rec) == (3, 3 * 2 * n * k * m)  # x W^T + b; d x = g W; d W = g^T x
    kinds = sorted(gemm_bound.kind(key) for key in rec.calls)
    assert kinds == [("addmm: {m} x 7 . 7 x 3", n), ("mm: {m} x 3 . 3 x 7", n), ("mm: {m} x 5 . 5 x 7", m)]


@pytest.mark.parametrize("onednn", ["1", "0"])
def test_fused_loss_products_are_all_counted(monkeypatch, onednn):
    """The output layer of the loss: logits, input and weight gradients, in two row chunks."""
    from luong_lit.nn import projection

    monkeypatch.setenv("LUONG_LIT_ONEDNN", onednn)
    projection.onednn_linear.cache_clear()
    projection.onednn_linear()  # its probe products run here, not under the recorder
    try:
        N, d, V = 600, 16, 50
        h, W = torch.randn(N, d, requires_grad=True), torch.randn(V, d, requires_grad=True)
        rec = gemm_bound.Recorder()
        with rec:
            linear_cross_entropy(h, W, torch.zeros(V, requires_grad=True), torch.randint(0, V, (N,)))
        assert _totals(rec)[1] == 3 * 2 * N * d * V
        if onednn == "1" and projection.onednn_linear() is not None:
            assert ("_linear_pointwise: {m} x 16 . 16 x 50", 512) in {gemm_bound.kind(key) for key in rec.calls}
    finally:
        projection.onednn_linear.cache_clear()


def test_batched_product_flops_and_replay_of_an_expanded_operand():
    a, b = torch.randn(4, 2, 6), torch.randn(6, 5).expand(4, 6, 5)  # b: stride 0 over the batch
    rec = gemm_bound.Recorder()
    with rec:
        torch.bmm(a, b)
    [call] = rec.calls.values()
    assert (call.count, call.flops) == (1, 2 * 4 * 2 * 6 * 5)
    assert gemm_bound.best_time(call.func, call.args, call.kwargs, reps=2) > 0.0
