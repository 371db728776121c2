"""Captured CUDA graphs (:mod:`luong_lit.engines.graphs`) compute what eager autograd computes
(skipped without a CUDA device; ``pytest -m gpu``)."""

from __future__ import annotations

import copy

import pytest
import torch
from conftest import compose_cfg, small_model, tiny_overrides, toy_batch

from luong_lit.data.loading.buckets import pad_batch
from luong_lit.engines import FastEngine
from luong_lit.engines.graphs import GraphedSteps
from luong_lit.nn.fast.static import static_nll
from luong_lit.training.run import train

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device"),
]
V = 40


def ragged(seed: int):
    return pad_batch(toy_batch(seed), 4, 12, 12).to("cuda")


def graphed(net, label_smoothing=0.1, step=None):
    def loss_fn(src, src_len, tgt_in, tgt_out):
        return static_nll(net, src, src_len, tgt_in, tgt_out, label_smoothing, step=step)[0]

    return GraphedSteps(loss_fn, list(net.parameters()))


def inputs(batch) -> dict:
    return {k: getattr(batch, k) for k in ("src", "src_len", "tgt_in", "tgt_out")}


def assert_replays_match_eager(steps, net, eager, dtype: str, tol: dict) -> None:
    """Capture on a first batch and replay on two more: each replay's loss and gradients are
    those of ``eager`` (a copy of ``net``) through the fast engine."""
    for seed in (1, 2, 3):
        b = ragged(seed)
        with torch.autocast("cuda", torch.bfloat16, enabled=dtype == "bf16"):
            loss, grads = steps(inputs(b))
            ref, _ = FastEngine().nll(eager, b, 0.1)  # padded rows and positions count for nothing
        eager.zero_grad()
        ref.backward()
        torch.testing.assert_close(loss, ref.detach(), **tol)
        for (name, _), g, q in zip(net.named_parameters(), grads, eager.parameters()):
            torch.testing.assert_close(g, q.grad, **tol, msg=name)
    assert len(steps.graphs) == 1  # one bucket, one graph


@pytest.mark.parametrize("att", ["global", "local_m", "local_p"])
@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
@pytest.mark.parametrize("bias", [True, False])  # False, bf16: the left-padded encoder
def test_replayed_graph_gives_the_eager_loss_and_gradients(att, dtype, bias):
    torch.manual_seed(0)
    net = small_model(
        src_vocab_size=V, tgt_vocab_size=V, embed_size=32, hidden_size=32, attention=att, bias=bias
    ).cuda()
    eager = copy.deepcopy(net)
    tol = {"fp32": {"rtol": 1e-5, "atol": 1e-5}, "bf16": {"rtol": 2e-2, "atol": 2e-2}}[dtype]
    assert_replays_match_eager(graphed(net), net, eager, dtype, tol)


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_a_compiled_step_in_the_graph_gives_the_eager_loss_and_gradients(dtype):
    """``engine.compile=step`` inside the captured iteration (the paper's local-p, no biases)."""
    from luong_lit.nn.fast.static import loss_step

    torch.manual_seed(0)
    net = small_model(
        src_vocab_size=V,
        tgt_vocab_size=V,
        embed_size=32,
        hidden_size=32,
        attention="local_p",
        bias=False,
    ).cuda()
    eager = copy.deepcopy(net)
    tol = {"fp32": {"rtol": 1e-4, "atol": 1e-4}, "bf16": {"rtol": 2e-2, "atol": 2e-2}}[dtype]
    steps = graphed(net, step=torch.compile(loss_step))
    assert_replays_match_eager(steps, net, eager, dtype, tol)


@pytest.mark.parametrize("feed", [True, False])  # False: one LSTM call for all steps
def test_dropout_masks_differ_between_replays(feed):
    """With input feeding the step's own masks; without it the decoder's stack of LSTMs,
    whose dropout between layers cuDNN would draw in a way no graph can capture."""
    torch.manual_seed(0)
    sizes = {"src_vocab_size": V, "tgt_vocab_size": V, "embed_size": 32, "hidden_size": 32}
    net = small_model(**sizes, dropout=0.5, feed_input=feed).cuda().train()
    steps = graphed(net, 0.0)
    b = inputs(ragged(1))
    losses = [float(steps(b)[0]) for _ in range(4)]  # same batch, same weights
    assert len(set(losses)) == 4, losses


@pytest.mark.parametrize("feed", [True, False])
def test_capturing_draws_no_dropout_masks(feed):
    """The first call (warm-ups, capture, replay) leaves the CUDA generator where one eager
    step leaves it, with the eager step's masks: where graphs are captured (again after a
    resume) does not change a run's dropout. Without feeding, the decoder's stack draws its
    masks between layers itself (``layerwise_lstm``)."""
    torch.manual_seed(0)
    sizes = {"src_vocab_size": V, "tgt_vocab_size": V, "embed_size": 32, "hidden_size": 32}
    net = small_model(**sizes, dropout=0.5, feed_input=feed).cuda().train()
    b = ragged(1)
    torch.cuda.manual_seed(7)
    ref = static_nll(net, *inputs(b).values(), 0.0)[0]  # the same fixed-shape loss, eager
    after_eager = torch.cuda.get_rng_state()
    torch.cuda.manual_seed(7)
    loss, _ = graphed(net, 0.0)(inputs(b))
    assert torch.equal(torch.cuda.get_rng_state(), after_eager)
    torch.testing.assert_close(loss, ref.detach(), rtol=1e-5, atol=1e-5)


def test_captured_training_tracks_the_eager_run(toy_corpus, tmp_path):
    """50 steps of ``train trainer=gpu`` captured and eager: the same losses, step by step."""
    import csv

    runs = {}
    for mode in ("capture", "off"):
        out = tmp_path / mode
        overrides = tiny_overrides(toy_corpus) + [
            "trainer=gpu",
            f"engine.graphs={mode}",
            "engine.buckets=[8,16,64]",
            "dropout=0",
            "model.net.hidden_dropout=0",
            "trainer.max_steps=50",
            "trainer.max_epochs=100",
            "trainer.log_every_n_steps=1",
            "logger=csv",
            "test_after_training=false",
            "callbacks.throughput.every_n_steps=10",
        ]
        train(compose_cfg(overrides, out))
        with next(out.glob("**/metrics.csv")).open() as f:
            table = list(csv.DictReader(f))
        rows = [r["train/loss"] for r in table if r.get("train/loss")]
        runs[mode] = torch.tensor([float(x) for x in rows])
        peaks = [float(r["train/gpu_peak_mib"]) for r in table if r.get("train/gpu_peak_mib")]
        assert len(peaks) >= 4 and min(peaks) > 0  # the throughput callback's memory figure
        assert peaks == sorted(peaks)  # the peak since the start: never reset
        if mode == "capture":  # one graph per bucket met: at most the three buckets
            graphs = [float(r["train/graphs"]) for r in table if r.get("train/graphs")]
            assert graphs and 1 <= graphs[-1] <= 3
    assert len(runs["capture"]) == len(runs["off"]) >= 45
    torch.testing.assert_close(runs["capture"], runs["off"], rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("bias", [True, False])
def test_the_layerwise_lstm_on_cudnn_is_the_stack_itself_with_dropout_off(bias):
    """cuDNN reads each layer's weights outside the stack's flat buffer (copied at each call):
    outputs and gradients equal the stack's own call, in training mode."""
    from luong_lit.nn.fast.static import layerwise_lstm

    torch.manual_seed(0)
    rnn = torch.nn.LSTM(16, 24, 3, bias=bias, batch_first=True, dropout=0.0).cuda().train()
    x = torch.randn(4, 9, 16, device="cuda", requires_grad=True)
    h0, c0 = torch.randn(3, 4, 24, device="cuda"), torch.randn(3, 4, 24, device="cuda")
    outs, grads = [], []
    for call in (layerwise_lstm, lambda r, *a: r(*a)):
        rnn.zero_grad()
        x.grad = None
        out = call(rnn, x, (h0, c0))[0]
        out.square().sum().backward()
        outs.append(out.detach())
        grads.append([x.grad.clone(), *(p.grad.clone() for p in rnn.parameters())])
    torch.testing.assert_close(outs[0], outs[1], rtol=1e-5, atol=1e-5)
    for got, ref in zip(*grads, strict=True):
        torch.testing.assert_close(got, ref, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("precision", ["32-true", "bf16-mixed"])
def test_every_bucket_is_captured_before_the_first_step_and_changes_nothing(
    toy_corpus, tmp_path, monkeypatch, precision
):
    """The captures made before the first step (``engine.prepare``, in the steps' autocast)
    leave the weights and the random state as they were, training captures no more, and the
    run trains the same weights as one that captures each bucket when it first meets it."""
    from lightning.pytorch import Callback

    from luong_lit.training.build import build
    from luong_lit.training.run_folder import RunFolder

    class Watch(Callback):  # its on_train_start runs before the module's, which captures
        def on_train_start(self, trainer, module) -> None:
            self.before = self.state(module)

        def on_train_batch_start(self, trainer, module, batch, batch_idx) -> None:
            if trainer.global_step == 0 and not hasattr(self, "first"):  # the first step only
                self.first = self.state(module)
                self.graphs = module.engine.captured_graphs

        def on_train_end(self, trainer, module) -> None:
            self.graphs_at_end = module.engine.captured_graphs

        @staticmethod
        def state(module):
            weights = {k: v.clone() for k, v in module.state_dict().items()}
            return weights, torch.cuda.get_rng_state(), torch.get_rng_state()

    def fit(folder: str):
        overrides = [*tiny_overrides(toy_corpus), "trainer=gpu", "engine.graphs=capture",
                     f"trainer.precision={precision}", "engine.buckets=[4,6,7,9]",
                     "data.batch_size=6", "trainer.max_epochs=3", "model.net.dropout=0.2",
                     "test_after_training=false", "seed=5"]  # fmt: skip
        cfg = compose_cfg(overrides, tmp_path / folder)
        dm, module, trainer = build(cfg, RunFolder.open(cfg))
        watch = Watch()
        trainer.callbacks.insert(0, watch)
        trainer.fit(module, dm)
        return watch, {k: v.detach().clone() for k, v in module.net.state_dict().items()}

    watch, before_start = fit("before")
    (w0, g0, c0), (w1, g1, c1) = watch.before, watch.first
    assert all(torch.equal(w0[k], w1[k]) for k in w0)
    assert torch.equal(g0, g1) and torch.equal(c0, c1)
    assert watch.graphs >= 2  # several buckets, captured before step 1
    assert watch.graphs_at_end == watch.graphs  # the steps replay them: none captured again
    monkeypatch.setattr(FastEngine, "prepare", lambda self, net, ls, shapes: None)
    late, as_met = fit("as_met")
    assert late.graphs == 0 and 1 <= late.graphs_at_end <= watch.graphs  # captured as met
    tol = {"rtol": 1e-4, "atol": 1e-5} if precision == "32-true" else {"rtol": 2e-2, "atol": 2e-3}
    for k, v in before_start.items():  # (atomic adds in the embeddings' backward: not bitwise)
        torch.testing.assert_close(v, as_met[k], **tol)
