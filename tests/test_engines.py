"""``luong_lit.engines``: the reference and fast engines give the same losses, gradients and
translations; fixed shapes, buckets, CUDA-graph plumbing, the compiled step and TF32 as
CPU-checkable parity."""

from __future__ import annotations

import dataclasses
import itertools

import pytest
import torch
from conftest import small_model

from luong_lit.data.loading.batching import collate
from luong_lit.data.loading.buckets import bucket_shape, pad_batch
from luong_lit.decoding.beam import beam_search
from luong_lit.decoding.corpus import decode_corpus
from luong_lit.decoding.ensemble import Ensemble
from luong_lit.decoding.search import AUTHORS, GREEDY, BeamSearch
from luong_lit.engines import FastEngine, ReferenceEngine, make_engine
from luong_lit.engines.graphs import GraphedSteps, auto_graphs, replayed_loss
from luong_lit.errors import ConfigError
from luong_lit.nn import Seq2Seq
from luong_lit.nn.fast.static import static_nll
from luong_lit.nn.fast.stepper import FastStepper
from luong_lit.nn.window import window

VARIANTS = [
    (a, s, f)
    for a, s, f in itertools.product(
        ["global", "local_m", "local_p"], ["dot", "general", "concat", "location"], [True, False]
    )
    if not (a != "global" and s == "location")
] + [("none", None, False)]


def engine_model(att="global", score="general", feed=True, dtype=torch.float64, **kw) -> Seq2Seq:
    """A small model; both engines compute it."""
    torch.manual_seed(0)
    return small_model(
        src_vocab_size=23, tgt_vocab_size=29, attention=att, score=score, feed_input=feed, **kw
    ).to(dtype)


def ragged_batch(seed: int = 0):
    """Five pairs of ragged lengths (a one-word source and a one-word target among them)."""
    g = torch.Generator().manual_seed(seed)
    lens = [(7, 6), (1, 3), (5, 1), (4, 6), (6, 2)]
    return collate(
        [
            (
                i,
                torch.randint(4, 23, (s,), generator=g).tolist(),
                torch.randint(4, 29, (t,), generator=g).tolist(),
            )
            for i, (s, t) in enumerate(lens)
        ]
    )


EXTRAS = [
    {},
    {"reverse_source": True, "src_eos": True, "tie_output": True, "init_state": "last"},
    {"reverse_source": True, "src_eos": True, "bias": False},  # the left-padded encoder
]


def grads_of(net, loss) -> list[torch.Tensor]:
    grads = torch.autograd.grad(loss, list(net.parameters()), allow_unused=True)
    return [torch.zeros_like(p) if g is None else g for p, g in zip(net.parameters(), grads)]


# ---------------------------------------------------------------- in training
def trained_weights(
    toy_corpus, tmp_path, mode: str, schedule: list[str], compile_="off", shapes="square"
) -> dict:
    from conftest import compose_cfg, tiny_overrides

    from luong_lit.training.run import train

    out = tmp_path / f"{mode}-{compile_}-{shapes}"
    overrides = tiny_overrides(toy_corpus) + [
        f"engine.graphs={mode}",
        f"engine.compile={compile_}",
        f"engine.shapes={shapes}",
        "engine.buckets=[4,8,16,64]" if compile_ == "off" else "engine.buckets=[16]",
        "dropout=0",
        "model.net.hidden_dropout=0",
        "trainer.max_epochs=2",
        "trainer.limit_train_batches=5",
        "test_after_training=false",
        *schedule,
    ]
    train(compose_cfg(overrides, out))
    ckpt = torch.load(out / "checkpoints" / "last.ckpt", weights_only=True)
    assert ckpt["global_step"] == 10  # every batch made one optimizer step
    return ckpt["state_dict"]


def refuse(name: str):
    """A stand-in for an encoder that must not be called."""

    def encode(*args):
        raise AssertionError(f"{name} was called")

    return encode


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


@pytest.mark.parametrize("att,score,feed", VARIANTS)
@pytest.mark.parametrize(
    "extra", [{}, {"reverse_source": True, "src_eos": True, "tie_output": True}]
)
def test_losses_and_gradients_equal_the_reference(att, score, feed, extra):
    net = engine_model(att, score, feed, **extra).train()
    batch = ragged_batch()
    results = []
    for engine in (FastEngine(), ReferenceEngine()):
        nll, tokens = engine.nll(net, batch, label_smoothing=0.1)
        grads = torch.autograd.grad(nll, list(net.parameters()), allow_unused=True)
        results.append((nll.detach(), tokens, grads))
    (nll_f, tok_f, g_f), (nll_r, tok_r, g_r) = results
    assert tok_f == tok_r
    torch.testing.assert_close(nll_f, nll_r)
    for (name, _), a, b in zip(net.named_parameters(), g_f, g_r):
        a = torch.zeros_like(b) if a is None and b is not None else a
        b = torch.zeros_like(a) if b is None and a is not None else b
        if a is not None:
            torch.testing.assert_close(a, b, msg=name)


@pytest.mark.parametrize("att,score,feed", VARIANTS)
def test_decoding_steps_equal_the_reference(att, score, feed):
    """The fast engine's decode-time form steps as the reference model's plain steps."""
    ref = engine_model(att, score, feed).eval()
    batch = ragged_batch(1)
    with torch.no_grad():
        stepper = FastEngine().for_decoding(ref)
        (m_f, s_f), (m_r, s_r) = (
            stepper.encode(batch.src, batch.src_len),
            ref.encode(batch.src, batch.src_len),
        )
        for t in range(batch.tgt_in.size(1)):
            l_f, s_f, a_f = stepper.step(batch.tgt_in[:, t], s_f, m_f, t)
            l_r, s_r, a_r = ref.step(batch.tgt_in[:, t], s_r, m_r, t)
            torch.testing.assert_close(l_f, l_r)
            if a_r is not None:
                torch.testing.assert_close(
                    a_f.dense(batch.src.size(1)), a_r.dense(batch.src.size(1))
                )


@pytest.mark.parametrize("att", ["global", "local_m", "local_p"])
@pytest.mark.parametrize("search", ["greedy", "beam5", "authors"])
def test_translations_equal_the_reference(att, search):
    """Greedy, beam 5 and the authors' beam 12 give the same words and scores."""
    ref = engine_model(att, "general", True, dtype=torch.float32).eval()
    g = torch.Generator().manual_seed(3)
    src_ids = [torch.randint(4, 23, (n,), generator=g).tolist() for n in (9, 1, 4, 12, 6, 3)]
    cfg = {"greedy": GREEDY, "beam5": BeamSearch(beam=5, n_best=2), "authors": AUTHORS}[search]
    fast = FastEngine().for_decoding(ref)
    out_f = decode_corpus(fast, src_ids, search=cfg, batch_size=4, keep_attention=True)
    out_r = decode_corpus(ref, src_ids, search=cfg, batch_size=4, keep_attention=True)
    assert [[h.ids for h in t] for t in out_f] == [[h.ids for h in t] for t in out_r]
    if not cfg.greedy:
        assert [t[0].score for t in out_f] == pytest.approx(
            [t[0].score for t in out_r], rel=1e-5, abs=1e-5
        )
    for a, b in zip(out_f, out_r):
        torch.testing.assert_close(a[0].attention, b[0].attention, rtol=1e-4, atol=1e-5)


def test_each_engine_gives_its_decode_time_form():
    net = engine_model().eval()
    assert isinstance(FastEngine().for_decoding(net), FastStepper)
    assert ReferenceEngine().for_decoding(net) is net
    assert FastEngine().for_decoding(net.train()) is net  # dropout on: the model's own steps
    pair = FastEngine(int8="output").for_decoding(Ensemble([net.eval(), net]).eval())
    assert all(isinstance(m, FastStepper) and m.int8_output is not None for m in pair.members)
    with pytest.raises(ConfigError, match="form of the fast engine"):
        ReferenceEngine().for_decoding(net, "output")
    with pytest.raises(ConfigError, match="engine 'turbo' is unknown"):
        make_engine("turbo")


def test_beam_search_over_the_decode_time_form_equals_the_model_itself():
    net = engine_model(dtype=torch.float32).eval()
    batch = ragged_batch(2)
    cfg = BeamSearch(beam=3, n_best=3)
    plain = beam_search(net, batch.src, batch.src_len, cfg)
    wrapped = beam_search(FastStepper(net), batch.src, batch.src_len, cfg)
    assert [[h.ids for h in s] for s in plain] == [[h.ids for h in s] for s in wrapped]


@pytest.mark.parametrize("att,score,feed", VARIANTS)
@pytest.mark.parametrize("extra", EXTRAS)
@pytest.mark.parametrize("engine", [FastEngine(), ReferenceEngine()], ids=["fast", "reference"])
def test_padded_static_loss_and_gradients_equal_the_eager_path(att, score, feed, extra, engine):
    net = engine_model(att, score, feed, **extra).train()
    batch = ragged_batch()
    nll, tokens = engine.nll(net, batch, label_smoothing=0.1)
    p = pad_batch(batch, 8, 11, 9)  # three more rows, longer sources and targets
    enc = "auto" if net.encoder.rnn.bias else "left_padded"  # exact on a CPU in float64
    s_nll, s_tokens = static_nll(net, p.src, p.src_len, p.tgt_in, p.tgt_out, 0.1, enc)
    assert int(s_tokens) == tokens
    torch.testing.assert_close(s_nll, nll)
    for (name, _), a, b in zip(net.named_parameters(), grads_of(net, s_nll), grads_of(net, nll)):
        torch.testing.assert_close(a, b, msg=name)


@pytest.mark.parametrize("att", ["global", "local_m", "local_p"])
@pytest.mark.parametrize("S,T", [(7, 12), (13, 7)])  # engine.shapes=pair: S and T differ
def test_padded_static_loss_equals_the_eager_path_where_source_and_target_differ(att, S, T):
    net = engine_model(att, "general", True).train()
    batch = ragged_batch()  # longest source 7, target positions 7
    nll, _ = FastEngine().nll(net, batch, label_smoothing=0.1)
    p = pad_batch(batch, 8, S, T)
    s_nll, _ = static_nll(net, p.src, p.src_len, p.tgt_in, p.tgt_out, 0.1, "auto")
    torch.testing.assert_close(s_nll, nll)
    for (name, _), a, b in zip(net.named_parameters(), grads_of(net, s_nll), grads_of(net, nll)):
        torch.testing.assert_close(a, b, msg=name)


def test_padding_adds_rows_and_positions_the_loss_ignores():
    batch = ragged_batch()
    padded = pad_batch(batch, 8, 11, 12)
    assert padded.src.shape == (8, 11) and padded.tgt_in.shape == (8, 12)
    assert padded.src_len.tolist() == batch.src_len.tolist() + [1, 1, 1]
    assert padded.index.tolist()[5:] == [-1, -1, -1]
    assert bool((padded.tgt_out[5:] == 0).all())
    assert torch.equal(padded.src[:5, : batch.src.size(1)], batch.src)


def test_a_batch_goes_to_the_smallest_bucket_that_holds_it():
    batch = ragged_batch()  # longest source 7, longest target 6 (+1 for <s> / </s>)
    assert bucket_shape(batch, 8, [4, 16, 8, 32]) == (8, 8, 8)
    assert bucket_shape(batch, 8, [4, 6]) is None  # too long for every bucket
    assert bucket_shape(batch, 4, [8]) is None  # more rows than the bucket
    assert bucket_shape(batch, 8, [4, 16, 8, 32], square=False) == (8, 8, 8)  # 7 and 7 (<s>)
    assert bucket_shape(batch, 8, [7, 8, 16], square=False) == (8, 7, 7)
    short = dataclasses.replace(batch, tgt_in=batch.tgt_in[:, :3], tgt_out=batch.tgt_out[:, :3])
    assert bucket_shape(short, 8, [4, 8, 16]) == (8, 8, 8)  # the source decides both
    assert bucket_shape(short, 8, [4, 8, 16], square=False) == (8, 8, 4)  # 4 decoder steps
    assert bucket_shape(short, 8, [8, 16], square=False) == (8, 8, 8)
    assert bucket_shape(short, 8, [2, 3], square=False) is None  # the source fits none


def test_windows_clamped_to_the_padded_length_select_the_same_slots():
    g = torch.Generator().manual_seed(0)
    src_len = torch.tensor([1, 3, 6, 10])
    center = torch.randint(-2, 13, (4, 5), generator=g)
    idx, valid = window(center, 2, src_len)
    idx_s, valid_s = window(center, 2, src_len, S=14)
    assert torch.equal(valid, valid_s)
    assert torch.equal(idx[valid], idx_s[valid])
    assert int(idx_s.max()) <= 13


@pytest.mark.parametrize(
    "schedule",
    [
        ["model.scheduler.epochs=1"],  # the rate falls step by step over the second epoch
        ["schedule=halving", "model.scheduler.after=0", "trainer.gradient_clip_val=0.01"],
    ],
)
def test_training_with_fixed_shapes_or_by_hand_makes_the_same_updates(
    schedule, toy_corpus, tmp_path
):
    """``static`` (what ``capture`` records on a GPU), with square buckets or a bucket each for
    source and target, trains the weights ``off`` trains, through Lightning's clipping, steps
    and schedules."""
    ref = trained_weights(toy_corpus, tmp_path, "off", schedule)
    for mode, shapes in (("static", "square"), ("static", "pair")):
        got = trained_weights(toy_corpus, tmp_path, mode, schedule, shapes=shapes)
        for name, value in ref.items():
            msg = f"{mode} {shapes} {name}"
            torch.testing.assert_close(got[name], value, atol=2e-5, rtol=1e-4, msg=msg)


def test_training_with_a_compiled_step_makes_the_same_updates(toy_corpus, tmp_path, monkeypatch):
    """``engine.compile=step`` through Lightning: the weights ``off`` trains (one bucket, so
    the step compiles for one shape; a GPU setting, let through on this CPU for the test)."""
    import luong_lit.engines.fast as fast

    monkeypatch.setattr(fast, "refuse_on_cpu", lambda option, device: None)
    schedule = ["model.scheduler.epochs=1"]
    ref = trained_weights(toy_corpus, tmp_path, "off", schedule)
    got = trained_weights(toy_corpus, tmp_path, "static", schedule, "step")
    for name, value in ref.items():
        torch.testing.assert_close(got[name], value, atol=2e-5, rtol=1e-4, msg=name)


@pytest.mark.parametrize(
    "device, precision, accumulate, world, buckets, want",
    [
        ("cuda", "bf16-mixed", 1, 1, [10, 20], "capture"),
        ("cuda", "32-true", 1, 1, [10, 20], "capture"),  # the main job's fp32: host-bound eager
        ("cpu", "32-true", 1, 1, [10, 20], "off"),  # no graphs on a CPU
        ("cuda", "16-mixed", 1, 1, [10, 20], "off"),  # fp16 needs a loss scaler: not captured
        ("cuda", "bf16-mixed", 2, 1, [10, 20], "off"),  # accumulation: Lightning's own steps
        ("cuda", "bf16-mixed", 1, 2, [10, 20], "off"),  # data parallel: all-reduce not captured
        ("cuda", "bf16-mixed", 1, 1, [], "off"),  # nothing to pad to
    ],
)
def test_auto_captures_only_where_capture_is_checked(
    device, precision, accumulate, world, buckets, want
):
    assert auto_graphs(device, precision, accumulate, world, buckets) == want


def test_the_default_config_asks_for_auto_and_a_cpu_run_resolves_it_to_off(toy_corpus, tmp_path):
    from conftest import compose_cfg, tiny_overrides

    from luong_lit.training.build import build
    from luong_lit.training.run_folder import RunFolder

    cfg = compose_cfg(tiny_overrides(toy_corpus), tmp_path)
    assert cfg.engine.graphs == "auto"
    _, module, trainer = build(cfg, RunFolder.open(cfg))
    trainer.strategy.connect(module)
    module.trainer = trainer
    module.setup("fit")
    assert module.engine.mode == "off" and module.automatic_optimization


def test_replayed_gradients_reach_the_parameters_through_an_ordinary_backward():
    """What a captured step hands the trainer: its loss, whose backward gives the graph's
    gradients (a parameter the graph gave no gradient keeps none)."""
    p1, p2 = torch.nn.Parameter(torch.randn(3)), torch.nn.Parameter(torch.randn(2, 2))
    g1 = torch.randn(3)
    loss = replayed_loss(torch.tensor(1.5), [g1, None], [p1, p2])
    assert loss.requires_grad and float(loss) == 1.5
    (loss / 1).backward()  # as Lightning does, with accumulate_grad_batches=1
    assert torch.equal(p1.grad, g1) and p2.grad is None
    torch.nn.utils.clip_grad_norm_([p1], 0.1)  # the trainer clips and steps as usual
    assert float(p1.grad.norm()) == pytest.approx(0.1, rel=1e-4)


def test_a_replayed_loss_does_not_reach_back_into_the_graphs_own_backward():
    """A captured step's loss still carries the graph's autograd history (its backward was
    already run, its buffers freed): the handed-over loss must not follow it a second time."""
    p = torch.nn.Parameter(torch.randn(3))
    graph_loss = (p * p).sum()
    (g,) = torch.autograd.grad(graph_loss, [p])  # the graph's own backward: buffers freed
    loss = replayed_loss(graph_loss, [g], [p])
    loss.backward()  # would raise "backward through the graph a second time" if it followed
    assert torch.equal(p.grad, 2 * p.detach())


@pytest.mark.parametrize("reverse", [True, False])
@pytest.mark.parametrize("eos_last", [True, False])
def test_the_left_padded_encoder_gives_the_masked_loops_states_and_gradients(reverse, eos_last):
    from luong_lit.nn.fast.static import left_padded_encode, static_encode

    torch.manual_seed(0)
    net = small_model(
        src_vocab_size=23, tgt_vocab_size=29, num_layers=3, reverse_source=reverse, bias=False
    )
    enc = net.double().train().encoder
    enc.eos_last = eos_last
    src_len = torch.tensor([7, 3, 1, 5])
    src = torch.randint(4, 23, (4, 9))
    src[torch.arange(9) >= src_len.unsqueeze(1)] = 0  # two padding slots even in the longest row
    outs = [encode(enc, src, src_len) for encode in (static_encode, left_padded_encode)]
    (a, (ha, ca)), (b, (hb, cb)) = outs
    for x, y in ((a, b), (ha, hb), (ca, cb)):
        torch.testing.assert_close(y, x)
    weights = torch.rand_like(a)
    params = list(enc.parameters())
    ga, gb = (
        torch.autograd.grad((o[0] * weights).sum() + o[1][0].sum() + o[1][1].sum(), params)
        for o in outs
    )
    for name, x, y in zip([n for n, _ in enc.named_parameters()], ga, gb):
        torch.testing.assert_close(y, x, msg=name)


@pytest.mark.parametrize("reverse", [True, False])
@pytest.mark.parametrize("eos_last", [True, False])
def test_the_right_padded_encoder_gives_the_masked_loops_states_and_gradients(reverse, eos_last):
    """In float64, with biases and dropout (the same masks, drawn in the same order): ``h_bar_s``
    at every position, each layer's ``h`` at each row's last word, and the gradients of both."""
    from luong_lit.nn.fast.static import right_padded_encode, static_encode

    torch.manual_seed(0)
    net = small_model(src_vocab_size=23, tgt_vocab_size=29, num_layers=3, dropout=0.3,
                      reverse_source=reverse, init_state="last")  # fmt: skip
    enc = net.double().train().encoder
    enc.eos_last = eos_last
    src_len = torch.tensor([7, 3, 1, 5])
    src = torch.randint(4, 23, (4, 9))
    src[torch.arange(9) >= src_len.unsqueeze(1)] = 0  # two padding slots even in the longest row
    outs = []
    for encode in (static_encode, right_padded_encode):
        torch.manual_seed(1)
        outs.append(encode(enc, src, src_len))
    (a, (ha, ca)), (b, (hb, cb)) = outs
    torch.testing.assert_close(b, a, rtol=1e-12, atol=1e-13)
    torch.testing.assert_close(hb, ha, rtol=1e-12, atol=1e-13)
    assert ca.isfinite().all() and cb.isnan().all()  # no cell state read: last and zero
    weights = torch.rand_like(a)
    params = list(enc.parameters())
    ga, gb = (torch.autograd.grad((o[0] * weights).sum() + o[1][0][-1].sum(), params)
              for o in outs)  # fmt: skip
    for name, x, y in zip([n for n, _ in enc.named_parameters()], ga, gb):
        torch.testing.assert_close(y, x, rtol=1e-12, atol=1e-13, msg=name)


@pytest.mark.parametrize("init_state", ["last", "zero"])
def test_the_fixed_shape_step_reads_right_padded_to_the_masked_loops_loss(init_state):
    """The whole fixed-shape loss and its gradients, ``auto`` (right-padded for ``last`` and
    ``zero``) against the masked loop, in float64 with dropout off."""
    from luong_lit.nn.fast.static import chosen_encoder, static_nll

    torch.manual_seed(2)
    net = small_model(src_vocab_size=23, tgt_vocab_size=29, init_state=init_state).double()
    p = pad_batch(ragged_batch(), 8, 11, 11)
    assert chosen_encoder("auto", net, p.src) == "right_padded"
    got = []
    for mode in ("masked", "auto"):
        loss = static_nll(net, p.src, p.src_len, p.tgt_in, p.tgt_out, encoder=mode)[0]
        got.append((loss, torch.autograd.grad(loss, list(net.parameters()))))
    torch.testing.assert_close(got[1][0], got[0][0], rtol=1e-12, atol=0)
    for x, y in zip(got[0][1], got[1][1]):
        torch.testing.assert_close(y, x, rtol=1e-10, atol=1e-12)


def test_auto_reads_left_padded_only_under_cuda_autocast_without_biases(monkeypatch):
    """With biases a zero input moves the state; in fp32 or fp16 (and on a CPU) ``auto`` keeps
    the masked loop for a decoder that starts from ``copy``; ``left_padded`` is refused with
    biases, ``right_padded`` with ``copy``."""
    from luong_lit.nn.fast import static

    src, src_len = torch.tensor([[5, 6, 7], [8, 0, 0]]), torch.tensor([3, 1])
    plain = small_model(src_vocab_size=23, tgt_vocab_size=29, bias=False)
    biased = small_model(src_vocab_size=23, tgt_vocab_size=29, bias=True)
    cases = [(plain, "auto", "left_padded_encode"), (biased, "auto", "left_padded_encode")]
    cases += [(plain, "masked", "left_padded_encode"), (plain, "left_padded", "static_encode")]
    for net, mode, banned in cases:
        with monkeypatch.context() as m:
            m.setattr(static, banned, refuse(banned))
            static.static_memory(net, src, src_len, mode)  # raises if the wrong one is used
    monkeypatch.setattr(torch, "is_autocast_enabled", lambda device: device == "cuda")
    monkeypatch.setattr(torch.Tensor, "is_cuda", property(lambda self: True))
    monkeypatch.setattr(torch, "get_autocast_dtype", lambda device: torch.bfloat16)
    assert static.chosen_encoder("auto", plain, src) == "left_padded"
    assert static.chosen_encoder("auto", biased, src) == "masked"
    monkeypatch.setattr(torch, "get_autocast_dtype", lambda device: torch.float16)
    assert static.chosen_encoder("auto", plain, src) == "masked"  # fp16: not checked on a GPU
    with pytest.raises(ValueError, match="without biases"):
        static.chosen_encoder("left_padded", biased, src)
    with pytest.raises(ValueError, match="init_state last or zero, not copy"):
        static.chosen_encoder("right_padded", biased, src)


@pytest.mark.parametrize("att,score", [("local_p", "general"), ("global", "dot")])
def test_the_compiled_decoder_step_gives_the_same_loss_and_gradients(att, score):
    """``engine.compile=step``: the fixed-shape step with its decoder step through
    ``torch.compile`` (inductor, on the CPU here) against the same step uncompiled, in float64,
    with the paper's encoder (no biases, reversed source)."""
    from torch._dynamo.utils import counters

    net = engine_model(att, score, True, reverse_source=True, bias=False).train()
    p = pad_batch(ragged_batch(), 8, 11, 11)
    inputs = (p.src, p.src_len, p.tgt_in, p.tgt_out)
    counters.clear()
    losses = [
        FastEngine(graphs="static", compile=c)._static_nll(net, 0.1, *inputs)[0]
        for c in ("off", "step")
    ]
    assert not counters["graph_break"], dict(counters["graph_break"])  # one graph per step
    assert counters["stats"]["unique_graphs"] >= 1  # it did compile
    torch.testing.assert_close(losses[1], losses[0])
    for (name, _), a, b in zip(
        net.named_parameters(), grads_of(net, losses[1]), grads_of(net, losses[0])
    ):
        torch.testing.assert_close(a, b, msg=name)


def test_compiling_needs_the_fixed_shape_step():
    from luong_lit.errors import ConfigError
    from luong_lit.validate import OptionError

    with pytest.raises(OptionError, match="compile='yes' is unknown; choose one of off, step"):
        FastEngine(compile="yes")
    with pytest.raises(ConfigError, match="engine.compile=step compiles the fixed-shape step"):
        FastEngine(graphs="auto", compile="step").setup("cuda", "16-mixed")
    FastEngine(graphs="static", compile="step").setup("cuda")  # no error
    for option, engine in (("engine.compile=step", FastEngine(graphs="static", compile="step")),
                           ("engine.graphs=capture", FastEngine(graphs="capture"))):  # fmt: skip
        with pytest.raises(ConfigError, match=f"^{option} is a setting for a CUDA GPU, and this"):
            engine.setup("cpu")


def test_tf32_is_an_explicit_gpu_setting():
    """``engine.tf32`` sets fp32 products and cuDNN to TensorFloat-32 or to full fp32 when the
    run is on a GPU, is refused elsewhere, and ``null`` leaves torch's settings alone."""
    from luong_lit.errors import ConfigError
    from luong_lit.validate import OptionError

    before = torch.get_float32_matmul_precision(), torch.backends.cudnn.allow_tf32
    try:
        torch.set_float32_matmul_precision("medium")
        FastEngine().setup("cuda")  # null: untouched (only settings: nothing runs on a device)
        assert torch.get_float32_matmul_precision() == "medium"
        FastEngine(tf32=True).setup("cuda")
        assert torch.get_float32_matmul_precision() == "high" and torch.backends.cudnn.allow_tf32
        FastEngine(tf32=False).setup("cuda")
        assert torch.get_float32_matmul_precision() == "highest"
        assert not torch.backends.cudnn.allow_tf32
        with pytest.raises(ConfigError, match="engine.tf32=false is a setting of CUDA GPUs"):
            FastEngine(tf32=False).setup("cpu")
        with pytest.raises(OptionError, match="tf32"):
            FastEngine(tf32="yes")
        assert FastEngine(tf32=True).describe()["tf32"] is True
    finally:
        torch.set_float32_matmul_precision(before[0])
        torch.backends.cudnn.allow_tf32 = before[1]


def test_the_compiled_step_differentiates_as_eager_autograd_under_autocast(monkeypatch):
    """``engine.compile=step`` under bf16 autocast, with torch's traced backward set to another
    autocast dtype (as the GPU's default fp16 met the bf16 forward there, and inductor failed
    with "Unexpected floating ScalarType in at::autocast::prioritize"): the compiled step runs
    its backward without autocast, as eager autograd does, and gives the eager step's loss."""
    import torch._functorch.config as functorch_config

    from luong_lit.nn.fast.lstm import RecurrentWeight

    forced = [{"device_type": "cpu", "dtype": torch.float16}]
    monkeypatch.setattr(functorch_config, "backward_pass_autocast", forced)
    net = engine_model("global", "dot", True, dtype=torch.float32, reverse_source=True, bias=False)
    p = pad_batch(ragged_batch(), 8, 11, 11)
    inputs = (p.src, p.src_len, p.tgt_in, p.tgt_out)
    grads = {}
    for c in ("off", "step"):
        net.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = FastEngine(graphs="static", compile=c)._static_nll(net.eval(), 0.0, *inputs)[0]
        loss.backward()
        grads[c] = (loss.detach(), [q.grad.clone() for q in net.parameters()])
    torch.testing.assert_close(grads["step"][0], grads["off"][0], rtol=1e-2, atol=1e-2)
    for a, b in zip(grads["step"][1], grads["off"][1]):
        assert (a - b).abs().max() <= 0.05 * b.abs().max() + 1e-6
    W = torch.randn(6, 8, requires_grad=True)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert RecurrentWeight(W, defer=True).W.dtype == torch.bfloat16
        assert RecurrentWeight(W, defer=False).W.dtype == torch.float32  # its grads add in fp32


@pytest.mark.parametrize("bias", [True, False])
def test_the_layerwise_lstm_is_the_stack_with_its_dropout_drawn_between_layers(bias):
    """What the captured step runs for a decoder without input feeding (cuDNN's own dropout
    cannot be captured): with dropout off it is ``nn.LSTM`` itself; with dropout on, it is
    three one-layer LSTMs (the stack's own weights) with ``F.dropout`` between them, mask for
    mask, and its masks change from call to call."""
    from luong_lit.nn.fast.static import layerwise_lstm

    torch.manual_seed(0)
    rnn = torch.nn.LSTM(6, 5, 3, bias=bias, batch_first=True, dropout=0.4)
    x, h0, c0 = torch.randn(2, 7, 6), torch.randn(3, 2, 5), torch.randn(3, 2, 5)
    rnn.eval()
    torch.testing.assert_close(layerwise_lstm(rnn, x, (h0, c0))[0], rnn(x, (h0, c0))[0])
    rnn.train()
    layers = []
    for l in range(3):
        one = torch.nn.LSTM(6 if l == 0 else 5, 5, 1, bias=bias, batch_first=True)
        one.load_state_dict({k.replace(f"_l{l}", "_l0"): v for k, v in rnn.state_dict().items()
                             if k.endswith(f"_l{l}")})  # fmt: skip
        layers.append(one)
    torch.manual_seed(1)
    got = layerwise_lstm(rnn, x, (h0, c0))[0]
    torch.manual_seed(1)
    ref = x
    for l, one in enumerate(layers):
        ref = torch.nn.functional.dropout(ref, 0.4) if l > 0 else ref
        ref = one(ref, (h0[l : l + 1], c0[l : l + 1]))[0]
    torch.testing.assert_close(got, ref)
    assert not torch.allclose(got, layerwise_lstm(rnn, x, (h0, c0))[0])  # fresh masks
    got.sum().backward()
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in rnn.parameters())


def test_a_captured_graph_is_keyed_by_the_autocast_in_force(monkeypatch):
    """The same shapes under bf16 autocast and without it are two graphs (a graph captured in
    fp32 is never replayed for a bf16-mixed step); the capture itself is stubbed (no CUDA)."""
    steps = GraphedSteps(lambda **inputs: inputs["x"].sum(), [])
    monkeypatch.setattr(GraphedSteps, "_capture", lambda self, inputs: object())
    inputs = {"x": torch.zeros(2, 3)}
    plain = steps.prepare(inputs)
    monkeypatch.setattr(torch, "is_autocast_enabled", lambda device="cuda": device == "cuda")
    monkeypatch.setattr(torch, "get_autocast_dtype", lambda device="cuda": torch.bfloat16)
    mixed = steps.prepare(inputs)
    assert mixed is not plain and steps.prepare(inputs) is mixed and len(steps.graphs) == 2
