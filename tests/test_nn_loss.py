"""``luong_lit.nn.loss`` and the fused loss of ``luong_lit.nn.fast``: the paper's objective (Eq. 6)
against ``F.cross_entropy``, label smoothing against its formula, gradchecks."""

from __future__ import annotations

import pytest
import torch
from torch.nn import functional as F

from luong_lit.nn.fast.loss import linear_cross_entropy


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("chunk", [1, 7, 512])
@pytest.mark.parametrize("eps", [0.0, 0.1])
@pytest.mark.parametrize("ignore", [-100, 0])
def test_equals_cross_entropy_and_gradients(bias, chunk, eps, ignore):
    """``ignore=0``: rows whose target is 0 (padding) count for nothing, as in PyTorch."""
    torch.manual_seed(0)
    h = torch.randn(23, 6, dtype=torch.float64, requires_grad=True)
    W = torch.randn(11, 6, dtype=torch.float64, requires_grad=True)
    b = torch.randn(11, dtype=torch.float64, requires_grad=True) if bias else None
    y = torch.randint(0, 11, (23,))
    y[::4] = 0  # six rows of padding
    params = [h, W] + ([b] if bias else [])
    logits = F.linear(h, W, b)
    ref = F.cross_entropy(logits, y, reduction="sum", label_smoothing=eps, ignore_index=ignore)
    got = linear_cross_entropy(h, W, b, y, chunk, label_smoothing=eps, ignore_index=ignore)
    torch.testing.assert_close(got, ref)
    for g_ref, g_got in zip(
        torch.autograd.grad(ref * 0.3, params), torch.autograd.grad(got * 0.3, params)
    ):
        torch.testing.assert_close(g_got, g_ref)


def test_gradcheck():
    torch.manual_seed(1)
    h = torch.randn(5, 3, dtype=torch.float64, requires_grad=True)
    W = torch.randn(4, 3, dtype=torch.float64, requires_grad=True)
    b = torch.randn(4, dtype=torch.float64, requires_grad=True)
    y = torch.tensor([0, 3, 1, 1, 2])
    assert torch.autograd.gradcheck(lambda h, W, b: linear_cross_entropy(h, W, b, y, 2), (h, W, b))
    assert torch.autograd.gradcheck(
        lambda h, W, b: linear_cross_entropy(h, W, b, y, 2, 0.2), (h, W, b)
    )


def test_label_smoothing_equals_the_written_out_formula():
    """``(1 - eps) (-log p_y) + eps mean_v(-log p_v)``, written out row by row."""
    torch.manual_seed(2)
    h, W, b = torch.randn(6, 4, dtype=torch.float64), torch.randn(9, 4, dtype=torch.float64), None
    y = torch.randint(0, 9, (6,))
    log_p = torch.log_softmax(h @ W.t(), 1)  # (6, 9)
    want = sum(-(0.75 * log_p[i, y[i]] + 0.25 * log_p[i].mean()) for i in range(6))
    torch.testing.assert_close(linear_cross_entropy(h, W, b, y, 4, label_smoothing=0.25), want)
    with pytest.raises(ValueError, match="label_smoothing=1.0 is out of range"):
        linear_cross_entropy(h, W, b, y, label_smoothing=1.0)


def test_no_gradient_work_without_grad():
    h, W = torch.randn(4, 3), torch.randn(5, 3)
    with torch.no_grad():
        got = linear_cross_entropy(h, W, None, torch.tensor([0, 1, 2, 3]))
    torch.testing.assert_close(
        got, F.cross_entropy(h @ W.t(), torch.tensor([0, 1, 2, 3]), reduction="sum")
    )


@pytest.mark.parametrize("eps", [0.0, 0.1])
def test_bf16_autocast_matches_the_autocast_reference(eps):
    """Under mixed precision ``h_tilde`` arrives in bf16 while ``W_s`` stays fp32 (bf16-mixed)."""
    torch.manual_seed(4)
    W = torch.randn(50, 16, requires_grad=True)
    b = torch.randn(50, requires_grad=True)
    x = torch.randn(37, 16, requires_grad=True)
    y = torch.randint(0, 50, (37,))
    grads = []
    for fused in (True, False):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            h = torch.tanh(F.linear(x, torch.eye(16)))  # (37, 16) bf16, as h_tilde is
            assert h.dtype == torch.bfloat16
            loss = (
                linear_cross_entropy(h, W, b, y, 8, eps)
                if fused
                else F.cross_entropy(
                    F.linear(h, W, b).float(), y, reduction="sum", label_smoothing=eps
                )
            )
        grads.append([loss.detach(), *torch.autograd.grad(loss, [x, W, b])])
    assert grads[0][2].dtype == torch.float32  # W_s's gradient keeps the parameter's dtype
    for got, ref in zip(*grads):
        torch.testing.assert_close(got, ref, rtol=2e-2, atol=2e-2 * float(ref.abs().max()))
