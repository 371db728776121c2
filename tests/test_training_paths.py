"""The CPU fast paths of training equal their plain references.

Deferred weight gradients (``RecurrentWeight``), packing and unpacking, and the uniform-mask
dropout are checked against ``addmm``, ``pad_packed_sequence`` and the Bernoulli law.
"""

from __future__ import annotations

import pytest
import torch
from conftest import small_model
from torch.nn.utils.rnn import pad_packed_sequence

from luong_lit.engines import FastEngine
from luong_lit.nn.fast.dropout import dropout
from luong_lit.nn.fast.lstm import RecurrentWeight, pack_ids, unpack
from luong_lit.nn.fast.model import drop, fast_forward


def _recurrence(W, b0, h0, base, rows, deferred: bool):
    """A toy recurrence ``h_t = tanh(base + h_{t-1} W)`` whose rows leave as in a packed batch."""
    rw = RecurrentWeight(W) if deferred else None
    h, total = h0, 0.0
    for n in rows:
        h = h[:n]
        b = {"bias": b0, "rows": b0.expand(n, -1) * 0.5, "none": None}[base]
        pre = rw.addmm(b, h) if deferred else (h @ W if b is None else torch.addmm(b, h, W))
        h = torch.tanh(pre)
        total = total + (h * torch.arange(1, h.size(1) + 1, dtype=h.dtype)).sum()
    return total + W.sum()  # W also used outside the recurrence


@pytest.mark.parametrize("base", ["bias", "rows", "none"])
def test_recurrent_weight_gradients_equal_per_step_addmm(base):
    g = torch.Generator().manual_seed(0)
    W = torch.randn(5, 5, dtype=torch.float64, generator=g, requires_grad=True)
    b0 = torch.randn(5, dtype=torch.float64, generator=g, requires_grad=True)
    h0 = torch.randn(4, 5, dtype=torch.float64, generator=g, requires_grad=True)
    rows = [4, 4, 3, 3, 1]
    grads = [
        torch.autograd.grad(_recurrence(W, b0, h0, base, rows, d), (W, b0, h0), allow_unused=True)
        for d in (False, True)
    ]
    for ours, ref in zip(grads[1], grads[0]):
        if ref is None:
            assert ours is None
        else:
            torch.testing.assert_close(ours, ref)
    assert torch.autograd.gradcheck(
        lambda W_, h_: _recurrence(W_, b0, h_, base, rows, True), (W, h0)
    )


def test_recurrent_weight_without_autograd_is_addmm_and_backward_twice_is_safe():
    W, x, b = torch.randn(3, 4, requires_grad=True), torch.randn(2, 3), torch.randn(4)
    with torch.no_grad():
        rw = RecurrentWeight(W)
        assert not rw.deferred and torch.equal(rw.addmm(b, x), torch.addmm(b, x, W))
    out = RecurrentWeight(W).addmm(b, x).sum()
    (g1,) = torch.autograd.grad(out, W, retain_graph=True)
    (g2,) = torch.autograd.grad(out, W)  # pairs are cleared after each backward
    torch.testing.assert_close(g1, g2)
    torch.testing.assert_close(g1, x.sum(0, keepdim=True).t().expand(3, 4))


@pytest.mark.parametrize("sorted_rows", [False, True])
def test_pack_ids_and_unpack_round_trip_like_pad_packed_sequence(sorted_rows):
    lengths = torch.tensor([5, 5, 3, 1]) if sorted_rows else torch.tensor([3, 5, 1, 5])
    ids = torch.arange(1, 21).view(4, 5) * (torch.arange(5) < lengths.unsqueeze(1))
    packed, flat = pack_ids(ids, lengths, sorted_rows)
    assert packed.data.tolist() == ids.flatten()[flat].tolist() and 0 not in packed.data.tolist()
    data = torch.randn(len(flat), 3, dtype=torch.float64, requires_grad=True)
    ours = unpack(data, flat, 4, 5)
    ref, _ = pad_packed_sequence(packed._replace(data=data), batch_first=True, total_length=5)
    torch.testing.assert_close(ours, ref)
    w = torch.randn(4, 5, 3, dtype=torch.float64)
    torch.testing.assert_close(
        torch.autograd.grad((ours * w).sum(), data)[0],
        torch.autograd.grad((ref * w).sum(), data)[0],
    )


def test_batched_training_gradients_equal_one_sentence_at_a_time():
    """Packing, ragged rows, unpacking and deferred weight gradients, end to end (float64)."""
    torch.manual_seed(0)
    model = small_model(embed_size=6, hidden_size=6).double().train()
    src_len, tgt_len = torch.tensor([7, 4, 1, 5]), torch.tensor([3, 6, 1, 6])
    g = torch.Generator().manual_seed(1)
    src, tgt = torch.randint(4, 20, (4, 7), generator=g), torch.randint(4, 20, (4, 6), generator=g)
    src[torch.arange(7) >= src_len.unsqueeze(1)] = 0
    tgt[torch.arange(6) >= tgt_len.unsqueeze(1)] = 0
    w = torch.randn(4, 6, 6, dtype=torch.float64, generator=g)

    def loss_of(s, sl, t, weight):
        h_tilde, _ = fast_forward(model, s, sl, t)
        return (h_tilde * weight).sum()

    batched = torch.autograd.grad(
        loss_of(src, src_len, tgt, w), list(model.parameters()), allow_unused=True
    )
    alone = [torch.zeros_like(p) for p in model.parameters()]
    for b in range(4):
        n, m = int(tgt_len[b]), int(src_len[b])
        gb = torch.autograd.grad(
            loss_of(src[b : b + 1, :m], src_len[b : b + 1], tgt[b : b + 1, :n], w[b : b + 1, :n]),
            list(model.parameters()),
            allow_unused=True,
        )
        alone = [a + (x if x is not None else 0) for a, x in zip(alone, gb)]
    for ours, ref in zip(batched, alone):
        torch.testing.assert_close(ours if ours is not None else torch.zeros_like(ref), ref)


def test_dropout_keeps_each_element_with_probability_1_minus_p_and_scales_it():
    torch.manual_seed(0)
    x = torch.ones(200_000, requires_grad=True)
    y = dropout(x, 0.2)
    kept = y != 0
    rate = kept.double().mean().item()
    assert abs(rate - 0.8) < 5 * (0.8 * 0.2 / x.numel()) ** 0.5  # within 5 standard errors
    torch.testing.assert_close(y[kept], torch.full_like(y[kept], 1.25))
    (grad,) = torch.autograd.grad(y.sum(), x)
    assert torch.equal(grad, y.detach())  # the same mask and scale in backward
    assert abs(dropout(torch.randn(200_000, dtype=torch.float64), 0.5).mean().item()) < 0.02


def test_dropout_follows_the_modules_train_and_eval():
    layer, x = torch.nn.Dropout(0.5), torch.randn(1000)
    assert not torch.equal(drop(x, layer), x)
    layer.eval()
    assert torch.equal(drop(x, layer), x)
    assert torch.equal(dropout(x, 0.0), x) and not dropout(x, 1.0).any()


def test_training_path_gradcheck_float64():
    """Numerical gradients through packing, ragged rows and deferred weight gradients."""
    from torch.func import functional_call

    torch.manual_seed(0)
    model = (
        small_model(src_vocab_size=12, tgt_vocab_size=12, embed_size=4, hidden_size=4)
        .double()
        .train()
    )
    src_len, tgt_len = torch.tensor([5, 3, 1]), torch.tensor([2, 4, 4])
    src, tgt = torch.randint(4, 12, (3, 5)), torch.randint(4, 12, (3, 4))
    src[torch.arange(5) >= src_len.unsqueeze(1)] = 0
    tgt[torch.arange(4) >= tgt_len.unsqueeze(1)] = 0
    names = [
        "encoder.rnn.weight_hh_l0",
        "encoder.rnn.weight_ih_l1",
        "encoder.embedding.weight",
        "decoder.rnn.weight_hh_l1",
        "decoder.rnn.weight_ih_l0",
        "decoder.rnn.bias_hh_l1",
        "decoder.attention.score.W_a.weight",
        "decoder.W_c.weight",
    ]
    params = dict(model.named_parameters())
    w = torch.randn(3, 4, 4, dtype=torch.float64)

    class Fast(torch.nn.Module):  # the fast engine's forward pass, for functional_call
        def __init__(self, net):
            super().__init__()
            self.net = net

        def forward(self, *args):
            return fast_forward(self.net, *args)

    fast = Fast(model)

    def f(*chosen):
        chosen = {f"net.{n}": x for n, x in zip(names, chosen)}
        given = {f"net.{n}": x for n, x in params.items()}
        h_tilde, _ = functional_call(fast, {**given, **chosen}, (src, src_len, tgt))
        return (h_tilde * w).sum()

    inputs = tuple(params[n].detach().clone().requires_grad_(True) for n in names)
    assert torch.autograd.gradcheck(f, inputs, eps=1e-6, atol=1e-6)


def test_decoding_sees_weights_updated_by_a_fused_optimizer():
    """Fused Adam updates in place without a version bump; decoding in the next validation
    must use the new weights, not those of the previous one."""
    import copy

    torch.manual_seed(0)
    model = small_model()
    opt = torch.optim.Adam(model.parameters(), 1e-2, fused=True)
    src, src_len = torch.randint(4, 20, (2, 5)), torch.tensor([5, 5])
    tgt = torch.randint(4, 20, (2, 4))

    def first_step_logits(net):
        with torch.no_grad():
            stepper = FastEngine().for_decoding(net)
            memory, state = stepper.encode(src, src_len)
            return stepper.step(tgt[:, 0], state, memory, 0)[0]

    model.eval()
    first_step_logits(model)  # as a validation pass would
    model.train()
    model(src, src_len, tgt)[0].sum().backward()
    opt.step()
    model.eval()
    torch.testing.assert_close(first_step_logits(model), first_step_logits(copy.deepcopy(model)))
