"""``luong_lit.nn``: the encoder, the input-feeding decoder (§3.3) and Seq2Seq: stepwise decoding
against teacher forcing, ragged batches against one sentence at a time, reversal, dropout,
initialisation and the model's options."""

from __future__ import annotations

import itertools
import re

import pytest
import torch
from conftest import pair_batch, small_model
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from luong_lit.nn import ConfigError
from luong_lit.nn.encoder import reverse_index
from luong_lit.nn.fast.lstm import ragged_lstm
from luong_lit.nn.fast.model import fast_forward

VALID = [
    (a, s, f)
    for a, s, f in itertools.product(
        ["global", "local_m", "local_p"], ["dot", "general", "concat", "location"], [True, False]
    )
    if not (a != "global" and s == "location")
] + [("none", None, False)]


@pytest.mark.parametrize("att,score,feed", VALID)
@pytest.mark.parametrize("reverse", [False, True])
def test_stepwise_decoding_equals_teacher_forcing(att, score, feed, reverse):
    torch.manual_seed(0)
    model = small_model(
        dropout=0.3, attention=att, score=score, feed_input=feed, reverse_source=reverse
    ).eval()
    src, src_len, tgt = pair_batch()
    h_tilde, dense = model(src, src_len, tgt, return_attention=att != "none")
    memory, state = model.encode(src, src_len)
    for t in range(tgt.size(1)):
        logits, state, align = model.step(tgt[:, t], state, memory, t)
        torch.testing.assert_close(logits, model.logits(h_tilde[:, t]), atol=1e-5, rtol=1e-5)
        if align is not None:
            torch.testing.assert_close(
                align.dense(src.size(1))[:, 0], dense[:, t], atol=1e-6, rtol=1e-5
            )


@pytest.mark.parametrize("att", ["global", "local_m", "local_p"])
def test_ragged_targets_equal_one_sentence_at_a_time(att):
    """Rows that end early drop out of the fast engine's input-feeding loop; the rest must not
    notice, and the ended rows' outputs are zeros."""
    torch.manual_seed(0)
    model = small_model(attention=att).eval()
    src, src_len, tgt = pair_batch(T=6)
    tgt_len = torch.tensor([3, 6, 1])  # unsorted, with padding
    tgt[torch.arange(6) >= tgt_len.unsqueeze(1)] = 0
    h_tilde, dense = fast_forward(model, src, src_len, tgt, return_attention=True)
    for b in range(3):
        n, m = int(tgt_len[b]), int(src_len[b])
        alone, a_alone = model(
            src[b : b + 1, :m], src_len[b : b + 1], tgt[b : b + 1, :n], return_attention=True
        )
        torch.testing.assert_close(h_tilde[b, :n], alone[0], atol=1e-6, rtol=1e-5)
        torch.testing.assert_close(dense[b, :n, :m], a_alone[0], atol=1e-6, rtol=1e-5)
        assert not h_tilde[b, n:].any() and not dense[b, n:].any()


@pytest.mark.parametrize("bias,layers", [(True, 3), (False, 1)])
def test_ragged_lstm_equals_nn_lstm_on_a_packed_batch(bias, layers):
    """Outputs, final states, gradients and the inter-layer dropout masks all agree."""
    torch.manual_seed(0)
    rnn = torch.nn.LSTM(
        5, 6, layers, bias=bias, batch_first=True, dropout=0.4 if layers > 1 else 0.0
    )
    x = torch.randn(4, 7, 5, dtype=torch.float64, requires_grad=True)
    rnn.double()
    lengths = torch.tensor([3, 7, 1, 7])  # unsorted, with ties and a one-word sentence
    results = []
    for run in (rnn, lambda p: ragged_lstm(p, rnn)):
        torch.manual_seed(1)  # the same dropout draws for both
        out, (h, c) = run(pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False))
        padded, _ = pad_packed_sequence(out, batch_first=True)
        loss = (
            (padded * torch.linspace(-1, 1, 6, dtype=torch.float64)).sum()
            + h.pow(2).sum()
            + c.sum()
        )
        grads = torch.autograd.grad(loss, [x, *rnn.parameters()])
        results.append((padded, h, c, *grads))
    for ours, ref in zip(*results):
        torch.testing.assert_close(ours, ref)


def test_reverse_index_is_an_involution():
    lengths = torch.tensor([5, 3, 1])
    idx = reverse_index(lengths, 5)
    assert idx.tolist() == [[4, 3, 2, 1, 0], [2, 1, 0, 3, 4], [0, 1, 2, 3, 4]]
    assert torch.equal(idx.gather(1, idx), torch.arange(5).expand(3, 5))


def test_reversed_encoder_reads_backwards_but_returns_original_order():
    torch.manual_seed(0)
    model = small_model(num_layers=1, score="dot", reverse_source=True).eval()
    src, src_len, _ = pair_batch()
    h_bar, (h, _) = model.encoder(src, src_len)
    for b in range(3):
        n = int(src_len[b])
        words = src[b, :n].flip(0).unsqueeze(0)  # read backwards, one sentence alone
        out, (h_ref, _) = model.encoder.rnn(model.encoder.embedding(words))
        torch.testing.assert_close(h_bar[b, :n], out[0].flip(0))  # state of word s at position s
        torch.testing.assert_close(h[:, b], h_ref[:, 0])  # final state after the first word
        assert (h_bar[b, n:] == 0).all()


def test_parameters_initialised_uniformly():
    model = small_model(
        src_vocab_size=30, tgt_vocab_size=30, embed_size=16, hidden_size=16, attention="local_p"
    )
    for p in model.parameters():
        assert p.abs().max() <= 0.1


@pytest.mark.parametrize(
    "options,says",
    [
        ({"attention": "local_p", "score": "location"}, "attention=local_p score=location"),
        ({"attention": "none", "score": None}, "attention=none feed_input=true"),
        ({"score": "cosine"}, "score='cosine' is unknown"),
    ],
)
def test_invalid_combinations_raise_clear_errors(options, says):
    sizes = {"src_vocab_size": 10, "tgt_vocab_size": 10, "embed_size": 4, "hidden_size": 4}
    with pytest.raises(ConfigError, match=re.escape(says)):
        small_model(**sizes, num_layers=1, **options)


def test_each_option_reaches_the_module_it_sets():
    """Seq2Seq hands its option groups (:mod:`luong_lit.nn.options`) to the encoder and decoder."""
    net = small_model(
        num_layers=3,
        feed_input=False,
        reverse_source=True,
        src_eos=True,
        bias=False,
        dropout=0.3,
        hidden_dropout=0.2,
        output_dropout=0.1,
        pad_id=1,
        eos_id=2,
    )
    enc, dec = net.encoder, net.decoder
    assert (enc.reverse_source, enc.eos_last, net.src_eos) == (True, True, True)
    assert (net.pad_id, net.eos_id) == (1, 2)
    assert enc.embedding.padding_idx == dec.embedding.padding_idx == 1
    assert enc.rnn.num_layers == dec.rnn.num_layers == dec.num_layers == 3
    assert not enc.rnn.bias and not dec.rnn.bias and dec.W_s.bias is None and dec.W_c.bias is None
    assert enc.dropout.p == dec.dropout.p == enc.rnn.dropout == dec.rnn.dropout == 0.3
    assert (dec.hidden_dropout.p, dec.output_dropout.p) == (0.2, 0.1)
    assert not dec.feed_input and dec.rnn.input_size == dec.embed_size == 8
    tied = small_model(tie_output=True, init_state="last")
    assert tied.decoder.W_s.weight is tied.decoder.embedding.weight and tied.init_state == "last"


def test_an_unknown_option_is_one_line_naming_it_and_the_options():
    from luong_lit.validate import UnknownOption

    with pytest.raises(UnknownOption) as err:
        small_model(hiden_size=8)
    said = str(err.value.within("model.net"))
    assert said.startswith("model.net.hiden_size is not an option of Seq2Seq; its options: ")
    assert "src_vocab_size, tgt_vocab_size, pad_id, eos_id, embed_size, hidden_size" in said
    assert "\n" not in said


def test_dropout_only_in_training_and_on_layer_inputs():
    torch.manual_seed(0)
    model = small_model(dropout=0.5)
    src, src_len, tgt = pair_batch()
    model.eval()
    a, _ = model(src, src_len, tgt)
    b, _ = model(src, src_len, tgt)
    assert torch.equal(a, b)
    model.train()
    c, _ = model(src, src_len, tgt)
    assert not torch.allclose(a, c)


def test_init_schemes_and_hidden_dropout_options():
    torch.manual_seed(0)
    uni = small_model(init_scale=0.1)
    assert all(p.abs().max() <= 0.1 for p in uni.parameters())
    xav = small_model(init="xavier", forget_bias=1.0)
    b = xav.decoder.rnn.bias_ih_l0
    assert (
        torch.equal(b[8:16], torch.ones(8)) and not b[:8].any() and not xav.decoder.W_s.bias.any()
    )
    bound = (6 / (8 + 8)) ** 0.5  # Glorot range of one 8x8 gate block of weight_hh
    assert xav.encoder.rnn.weight_hh_l0.abs().max() <= bound
    with pytest.raises(ConfigError, match="init='he'"):
        small_model(init="he")
    with pytest.raises(ConfigError, match="hidden_dropout=1.0 is out of range"):
        small_model(hidden_dropout=1.0)
    net = small_model(hidden_dropout=0.5)
    src, src_len, tgt = pair_batch()
    net.train()
    assert not torch.equal(net(src, src_len, tgt)[0], net(src, src_len, tgt)[0])
    net.eval()
    torch.testing.assert_close(net(src, src_len, tgt)[0], net(src, src_len, tgt)[0])


@pytest.mark.parametrize("feed", [True, False])
def test_output_dropout_drops_only_what_w_s_reads(feed):
    """``output_dropout`` masks ``h_tilde_t`` before ``W_s`` in training: the recurrence and the
    attention are untouched (same draws elsewhere), every output is either dropped or scaled."""
    torch.manual_seed(0)
    att = "global"
    net = small_model(attention=att, feed_input=feed, output_dropout=0.5).train()
    ref = small_model(attention=att, feed_input=feed).train()
    ref.load_state_dict(net.state_dict())
    src, src_len, tgt = pair_batch()
    dropped, a = net(src, src_len, tgt, return_attention=True)
    kept, a_ref = ref(src, src_len, tgt, return_attention=True)
    torch.testing.assert_close(a, a_ref)  # attention (and so the recurrence) unchanged
    zero = dropped == 0
    assert zero.any() and (~zero).any()
    torch.testing.assert_close(dropped[~zero], 2 * kept[~zero])  # kept units scaled by 1 / (1 - p)
    net.eval()
    torch.testing.assert_close(net(src, src_len, tgt)[0], ref.eval()(src, src_len, tgt)[0])
    with pytest.raises(ConfigError, match="output_dropout=-0.1 is out of range"):
        small_model(output_dropout=-0.1)


def test_source_eos_option_equals_an_explicit_eos():
    """``src_eos=True`` is the model fed ``x_1 .. x_S </s>`` by hand; attention covers ``</s>``."""
    torch.manual_seed(0)
    net = small_model(src_eos=True, eos_id=3).eval()
    ref = small_model().eval()
    ref.load_state_dict(net.state_dict())
    src, src_len, tgt = pair_batch()
    explicit = torch.cat([src, torch.zeros_like(src[:, :1])], 1)  # (B, S+1)
    explicit[torch.arange(3), src_len] = 3
    out, a = net(src, src_len, tgt, return_attention=True)
    ref_out, ref_a = ref(explicit, src_len + 1, tgt, return_attention=True)
    torch.testing.assert_close(out, ref_out)
    torch.testing.assert_close(a, ref_a)
    for b in range(3):  # the </s> slot gets weight; the padding after it none
        assert (a[b, :, src_len[b]] > 0).all() and not a[b, :, src_len[b] + 1 :].any()


def test_reversed_source_with_eos_reads_the_eos_last():
    """With ``reverse_source`` and ``src_eos`` the LSTM reads ``x_S .. x_1 </s>``."""
    torch.manual_seed(0)
    net = small_model(src_eos=True, reverse_source=True).eval()
    src, src_len, _ = pair_batch()
    memory, state = net.encode(src, src_len)
    for b in range(3):
        n = int(src_len[b])
        words = torch.cat([src[b, :n].flip(0), torch.tensor([3])])  # x_S .. x_1 </s>
        out, (h, c) = net.encoder.rnn(net.encoder.embedding(words).unsqueeze(0))  # (1, n+1, d)
        torch.testing.assert_close(memory.h_bar_s[b, n], out[0, -1])  # </s>, read last
        torch.testing.assert_close(memory.h_bar_s[b, :n], out[0, :n].flip(0))  # original order
        torch.testing.assert_close(state.h[:, b], h[:, 0])


@pytest.mark.parametrize("init_state", ["copy", "last", "zero"])
def test_decoder_initial_state_options(init_state):
    torch.manual_seed(0)
    net = small_model(init_state=init_state)
    src, src_len, _ = pair_batch()
    _, (h, c) = net.encoder(src, src_len)  # (L, B, d) each
    _, state = net.encode(src, src_len)
    want = {
        "copy": (h, c),
        "last": (h[-1:].expand(2, -1, -1),) * 2,
        "zero": (torch.zeros_like(h),) * 2,
    }[init_state]
    torch.testing.assert_close((state.h, state.c), want)
    with pytest.raises(ConfigError, match="init_state='bridge' is unknown"):
        small_model(init_state="bridge")
    with pytest.raises(ConfigError, match="attention=none init_state=zero"):
        small_model(attention="none", score=None, feed_input=False, init_state="zero")


def test_tied_output_layer_is_the_target_embedding():
    """``tie_output``: (V, d) matrix for ``emb(y_{t-1})`` and ``W_s``; the gradient sums both."""
    torch.manual_seed(0)
    net = small_model(tgt_vocab_size=30, tie_output=True)
    assert net.decoder.W_s.weight is net.decoder.embedding.weight
    untied = small_model(tgt_vocab_size=30)
    n_params = lambda m: sum(p.numel() for p in m.parameters())  # noqa: E731
    assert n_params(untied) - n_params(net) == 30 * 8
    src, src_len, tgt = pair_batch()
    untied.load_state_dict(net.state_dict())  # the same numbers in two separate matrices
    for m in (net, untied):
        m.zero_grad()
        h_tilde, _ = m(src, src_len, tgt)
        m.logits(h_tilde.reshape(-1, 8)).logsumexp(-1).sum().backward()
    torch.testing.assert_close(
        net.decoder.W_s.weight.grad,
        untied.decoder.W_s.weight.grad + untied.decoder.embedding.weight.grad,
    )
    with pytest.raises(ConfigError) as refused:  # both ways out, each named
        small_model(tgt_vocab_size=30, embed_size=16, tie_output=True)
    said, head = str(refused.value), "the target embedding (embed_size=16) is also W_s"
    assert f"tie_output=true: {head} (hidden_size=8)" in said
    assert said.endswith("also set embed_size=8, or set tie_output=false")
    from luong_lit.training.instantiate import config_error

    assert str(config_error("model.net", refused.value)).endswith(
        "also set model.net.embed_size=8, or set model.net.tie_output=false"
    )  # built from the config: each option named by its path


def test_bf16_autocast_training_step_with_input_feeding():
    """Mixed precision reaches the unrolled decoder's deferred recurrent weights (CPU autocast
    here; ``tests/test_gpu.py`` runs the same on CUDA): finite fp32 gradients near fp32's."""
    torch.manual_seed(3)
    model = small_model(embed_size=16, hidden_size=16, attention="local_p")
    src, src_len, tgt = pair_batch()
    grads = []
    for enabled in (False, True):
        model.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=enabled):
            h_tilde, _ = model(src, src_len, tgt)
            loss = model.logits(h_tilde).float().logsumexp(-1).sum()
        loss.backward()
        grads.append({n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None})
    assert grads[1].keys() == grads[0].keys()
    scale = max(float(g.abs().max()) for g in grads[0].values())  # W_a's bias has a zero gradient
    for name, g in grads[1].items():
        assert g.dtype == torch.float32 and torch.isfinite(g).all(), name
        torch.testing.assert_close(g, grads[0][name], rtol=0.1, atol=0.02 * scale, msg=name)
