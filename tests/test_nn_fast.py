"""``luong_lit.nn.fast``: the same model computed faster, against the plain modules: the
decode-time stepper, 8-bit products, projections, the recurrent weight, packing, dropout and the
training path."""

from __future__ import annotations

import pytest
import torch
from conftest import pair_batch, small_model
from torch.nn import functional as F
from torch.nn.utils.rnn import pad_packed_sequence

from luong_lit.engines import FastEngine
from luong_lit.nn.fast.dropout import dropout
from luong_lit.nn.fast.lstm import RecurrentWeight, pack_ids, unpack
from luong_lit.nn.fast.model import drop, fast_forward
from luong_lit.nn.fast.projection import cpu_linear, linear_columns, onednn_linear, project_rows


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


def test_fast_stepper_looks_up_the_projected_embeddings_of_every_word():
    """The decode-time wrapper gathers ``W_ih emb(y)`` from a (V, 4d) table built from the
    weights it was given; its steps equal the teacher-forced pass."""
    from luong_lit.nn.fast.stepper import FastStepper

    torch.manual_seed(0)
    net = small_model(dropout=0.3).eval()
    src, src_len, tgt = pair_batch()
    with torch.no_grad():
        net.decoder.embedding.weight.mul_(2.0)  # edited in place before decoding starts
        stepper = FastStepper(net)
        assert stepper.table.shape == (20, 32)
        h_tilde, _ = net(src, src_len, tgt)
        memory, state = stepper.encode(src, src_len)
        for t in range(tgt.size(1)):
            logits, state, _ = stepper.step(tgt[:, t], state, memory, t)
            torch.testing.assert_close(logits, net.logits(h_tilde[:, t]), atol=1e-5, rtol=1e-5)


def test_int8_output_layer_serves_decoding_only():
    """``FastStepper(int8="output")``: decoding logits come from int8 ``W_s`` (close to the
    float ones, bias included); the model itself keeps its float weights."""
    from luong_lit.decoding.ensemble import Ensemble
    from luong_lit.nn.fast.stepper import FastStepper

    torch.manual_seed(0)
    net = small_model(tgt_vocab_size=50, hidden_size=16).eval()
    with torch.no_grad():
        net.decoder.W_s.bias.uniform_(-3, 3)  # a bias large enough to matter
    h = torch.randn(33, 16).tanh()
    W, b = net.decoder.W_s.weight, net.decoder.W_s.bias
    with torch.no_grad():
        ref = h @ W.t() + b  # (33, 50)
        q = FastStepper(net, "output").logits(h)
        err = (q - ref).abs().max()
        assert 0 < err < 0.01 * ref.abs().max()
        torch.testing.assert_close(net.logits(h), F.linear(h, W, b))  # the model: float weights
    pair = FastEngine().for_decoding(Ensemble([net, net]).eval(), "output")
    assert all(isinstance(m, FastStepper) and m.int8_output is not None for m in pair.members)
    src, src_len, tgt = pair_batch()
    with torch.no_grad():
        memory, state = pair.encode(src, src_len)
        logits, _, _ = pair.step(tgt[:, 0], state, memory, 0)
        one = FastStepper(net, "output")
        m1, s1 = one.encode(src, src_len)
        torch.testing.assert_close(logits, one.step(tgt[:, 0], s1, m1, 0)[0])


@pytest.mark.parametrize("feed", [True, False])
def test_int8_decoder_serves_decoding_only(feed):
    """``int8="all"``: the decoder's LSTM layers and ``W_c`` also run in int8 when stepping,
    close to the float step; teacher-forced scoring keeps the float weights exactly."""
    from luong_lit.nn.fast.stepper import FastStepper

    torch.manual_seed(5)
    net = small_model(
        tgt_vocab_size=30, embed_size=16, hidden_size=16, attention="local_p", feed_input=feed
    ).eval()
    src, src_len, tgt = pair_batch(V=20)
    with torch.no_grad():
        forced = net(src, src_len, tgt)[0]
        memory, state = net.encode(src, src_len)
        states, refs = [state], []
        for t in range(3):
            logits, state, _ = net.step(tgt[:, t], state, memory, t)
            states.append(state)
            refs.append(logits)
        stepper = FastStepper(net, "all")
        assert len(stepper.form.weights) == 2 and stepper.form.W_c is not None
        torch.testing.assert_close(net(src, src_len, tgt)[0], forced, rtol=0, atol=0)
        for t, ref in enumerate(refs):  # each int8 step starts from the float state
            err = (stepper.step(tgt[:, t], states[t], memory, t)[0] - ref).abs().max()
            assert 0 < err < 0.02 * ref.abs().max()
        stepper.int8_output = None  # float W_s: a difference left comes from the decoder's int8
        assert (stepper.step(tgt[:, 1], states[1], memory, 1)[0] - refs[1]).abs().max() > 0
    with pytest.raises(ValueError, match="int8 parts"):
        FastStepper(net, "encoder")


@pytest.mark.parametrize("n", [1, 7, 31, 32, 333, 700])
@pytest.mark.parametrize("bias", [True, False])
def test_decoding_projection_equals_linear(n, bias):
    """``project_rows`` (column blocks from ``MIN_ROWS`` rows on) equals ``F.linear``."""
    g = torch.Generator().manual_seed(n)
    h, W = torch.randn(n, 16, generator=g), torch.randn(1100, 16, generator=g)
    b = torch.randn(1100, generator=g) if bias else None
    with torch.no_grad():
        torch.testing.assert_close(project_rows(h, W, b), torch.nn.functional.linear(h, W, b))
    W.requires_grad_(True)
    out = project_rows(h, W, b)  # under autograd: F.linear itself, so gradients flow
    out.sum().backward()
    torch.testing.assert_close(W.grad, h.sum(0).expand_as(W))


@pytest.mark.parametrize("cols", [1, 100, 256, 5000])
@pytest.mark.parametrize("bias", [True, False])
def test_column_block_projection_equals_linear(cols, bias):
    """``linear_columns`` (products over blocks of output columns) equals ``F.linear``."""
    g = torch.Generator().manual_seed(cols)
    h, W = (
        torch.randn(37, 16, generator=g),
        torch.randn(1100, 16, generator=g),
    )  # 1100: a ragged last block
    b = torch.randn(1100, generator=g) if bias else None
    torch.testing.assert_close(linear_columns(h, W, b, cols), torch.nn.functional.linear(h, W, b))


@pytest.mark.parametrize("onednn", ["1", "0"])
@pytest.mark.parametrize("n", [1, 5, 150, 513])
def test_cpu_linear_equals_linear_with_and_without_onednn(monkeypatch, onednn, n):
    """``cpu_linear`` (oneDNN's kernel where allowed, else column blocks) equals ``F.linear``,
    for a strided ``h`` too; ``LUONG_LIT_ONEDNN=0`` turns the oneDNN kernel off."""
    monkeypatch.setenv("LUONG_LIT_ONEDNN", onednn)
    onednn_linear.cache_clear()
    try:
        if onednn == "0":
            assert onednn_linear() is None
        g = torch.Generator().manual_seed(n)
        h, W, b = (
            torch.randn(16, n, generator=g).t(),
            torch.randn(1100, 16, generator=g),
            torch.randn(1100, generator=g),
        )
        for bias in (b, None):
            torch.testing.assert_close(
                cpu_linear(h, W, bias), torch.nn.functional.linear(h, W, bias)
            )
    finally:
        onednn_linear.cache_clear()


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
