"""The benchmarks' own code: `gemm_bound.py`'s product counter against hand-counted FLOPs, and
the fused cell of `cell_fusion.py` against the library's cell."""
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


def test_fused_cell_of_the_cell_benchmark_equals_the_library_cell():
    """``cell_fusion.py`` times equal work: same outputs and gradients as ``lstm_cell``."""
    import cell_fusion
    from luong_lit.nn.lstm import lstm_cell

    torch.manual_seed(0)
    gates = torch.randn(5, 4 * 3, dtype=torch.double, requires_grad=True)
    c = torch.randn(5, 3, dtype=torch.double, requires_grad=True)
    assert torch.autograd.gradcheck(cell_fusion.fused_cell, (gates, c))
    dh, dc = torch.randn(5, 3, dtype=torch.double), torch.randn(5, 3, dtype=torch.double)
    for grads in ([dh, dc], [dh, None]):  # c_t used by the next step, or not (the last step)
        got, want = [], []
        for cell, out in ((cell_fusion.fused_cell, got), (lstm_cell, want)):
            h_t, c_t = cell(gates, c)
            used = [(x, g) for x, g in zip((h_t, c_t), grads) if g is not None]
            out += [h_t, c_t, *torch.autograd.grad([x for x, _ in used], (gates, c), [g for _, g in used])]
        for a, b in zip(got, want):
            torch.testing.assert_close(a, b)
