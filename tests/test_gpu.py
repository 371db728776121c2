"""On a CUDA device the model computes what it computes on the CPU (skipped without one)."""

from __future__ import annotations

import copy

import pytest
import torch
from conftest import compose_cfg, small_model, tiny_overrides, toy_batch

from luong_lit.decoding.beam import beam_search
from luong_lit.decoding.fixed import cuda_graph, fixed_beam_search
from luong_lit.decoding.greedy import greedy_decode
from luong_lit.decoding.search import BeamSearch
from luong_lit.engines import ENGINES
from luong_lit.training.run import train

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device"),
]
V = 40


@pytest.mark.parametrize("att", ["global", "local_m", "local_p"])
@pytest.mark.parametrize("engine", list(ENGINES))
def test_loss_and_gradients_match_the_cpu(att, engine):
    torch.manual_seed(0)
    cpu = small_model(
        src_vocab_size=V, tgt_vocab_size=V, embed_size=16, hidden_size=16, attention=att
    ).double()
    gpu = copy.deepcopy(cpu).cuda()
    batch, engine = toy_batch(), ENGINES[engine]()
    losses = []
    for net, b in ((cpu, batch), (gpu, batch.to("cuda"))):
        nll, _ = engine.nll(net, b, label_smoothing=0.1)
        nll.backward()
        losses.append(nll.detach().cpu())
    torch.testing.assert_close(losses[1], losses[0], rtol=1e-9, atol=1e-9)
    for (name, p), q in zip(cpu.named_parameters(), gpu.parameters()):
        torch.testing.assert_close(q.grad.cpu(), p.grad, rtol=1e-7, atol=1e-9, msg=name)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_the_fused_cuda_cell_equals_the_cpu_cell_forward_and_backward(dtype):
    """``lstm_cell`` on CUDA (one fused kernel each way) against the same cell on the CPU
    (its eight operators): ``h``, ``c`` and the gradients of ``gates`` and ``c_{t-1}``; and
    under bf16 autocast the cell runs in ``c``'s dtype."""
    from luong_lit.nn.fast.lstm import lstm_cell

    g = torch.Generator().manual_seed(0)
    gates, c = torch.randn(5, 4 * 16, generator=g, dtype=dtype), torch.randn(5, 16, dtype=dtype)
    dh, dc = torch.randn(5, 16, dtype=dtype), torch.randn(5, 16, dtype=dtype)
    found = []
    for device in ("cpu", "cuda"):
        x, c0 = (t.to(device).requires_grad_() for t in (gates, c))
        h1, c1 = lstm_cell(x, c0)
        torch.autograd.backward([h1, c1], [dh.to(device), dc.to(device)])
        found.append([t.detach().cpu() for t in (h1, c1, x.grad, c0.grad)])
    tol = {"rtol": 1e-12, "atol": 1e-12} if dtype == torch.float64 else {}
    for cpu, cuda, name in zip(*found, ("h", "c", "d gates", "d c")):
        torch.testing.assert_close(cuda, cpu, msg=name, **tol)
    with torch.autocast("cuda", dtype=torch.bfloat16):
        h1, c1 = lstm_cell(gates.float().cuda().bfloat16(), c.float().cuda())
    assert h1.dtype == c1.dtype == torch.float32


@pytest.mark.parametrize("att", ["global", "local_p"])
def test_decoding_on_the_gpu_gives_the_cpu_output(att):
    torch.manual_seed(1)
    cpu = (
        small_model(
            src_vocab_size=V, tgt_vocab_size=V, embed_size=16, hidden_size=16, attention=att
        )
        .double()
        .eval()
    )
    gpu = copy.deepcopy(cpu).cuda()
    b = toy_batch(seed=1)
    g = b.to("cuda")
    assert greedy_decode(gpu, g.src, g.src_len)[0] == greedy_decode(cpu, b.src, b.src_len)[0]
    cfg = BeamSearch(beam=4, n_best=2)
    on_gpu = [
        [(h.ids, round(float(h.score), 8)) for h in s]
        for s in beam_search(gpu, g.src, g.src_len, cfg)
    ]
    on_cpu = [
        [(h.ids, round(float(h.score), 8)) for h in s]
        for s in beam_search(cpu, b.src, b.src_len, cfg)
    ]
    assert on_gpu == on_cpu


@pytest.mark.parametrize("att", ["global", "local_p"])
@pytest.mark.parametrize("feed", [True, False])
def test_bf16_autocast_training_step_is_finite_and_close(att, feed):
    """bf16 mixed precision (the GPU check's second setting) stays near the fp32 loss."""
    torch.manual_seed(2)
    net = small_model(
        src_vocab_size=V,
        tgt_vocab_size=V,
        embed_size=32,
        hidden_size=32,
        attention=att,
        feed_input=feed,
    ).cuda()
    b = toy_batch(seed=2).to("cuda")
    engine = ENGINES["fast"]()
    with torch.no_grad():
        full, tokens = engine.nll(net, b)
    with torch.autocast("cuda", dtype=torch.bfloat16):
        mixed, _ = engine.nll(net, b)
    mixed.backward()
    assert torch.isfinite(mixed)
    grads = [p.grad for p in net.parameters() if p.grad is not None]
    assert grads and all(g.dtype == torch.float32 and torch.isfinite(g).all() for g in grads)
    assert abs(float(mixed.detach()) - float(full)) / tokens < 0.05  # per token, in nats


@pytest.mark.parametrize("precision", ["32-true", "bf16-mixed"])
def test_training_validation_and_bleu_callback(precision, toy_corpus, tmp_path):
    """The whole Lightning path on the GPU: training, validation (under autocast with
    bf16-mixed) and the dev BLEU callback's decoding (outside it), two epochs."""
    cfg = compose_cfg(
        tiny_overrides(toy_corpus)
        + ["trainer=gpu", f"trainer.precision={precision}", "trainer.max_epochs=2"],
        tmp_path,
    )
    metrics = train(cfg)
    assert {"train/loss", "val/ppl", "val/bleu"} <= metrics.keys()
    assert (
        torch.isfinite(torch.tensor(float(metrics["train/loss"])))
        and float(metrics["val/ppl"]) > 1.0
    )
    assert (tmp_path / "checkpoints" / "last.ckpt").exists()


@pytest.mark.parametrize("att", ["global", "local_m", "local_p"])
@pytest.mark.parametrize("form", ["reference", "fast stepper"])
def test_beam_search_in_captured_chunks_finds_what_it_finds_eagerly(att, form):
    """Each chunk of 8 steps one CUDA graph, captured once and replayed: the same hypotheses,
    scores and attention as the same search run step by step on the GPU, for the reference
    model and the fast engine's stepper (what translate decodes with)."""
    from luong_lit.engines import FastEngine

    torch.manual_seed(0)
    net = small_model(src_vocab_size=V, tgt_vocab_size=V, embed_size=16, hidden_size=16,
                      attention=att).cuda().eval()  # fmt: skip
    model = net if form == "reference" else FastEngine().for_decoding(net)
    src = torch.randint(4, V, (6, 11), device="cuda")
    src_len = torch.tensor([11, 9, 7, 5, 3, 2], device="cuda")
    for cfg in (BeamSearch(beam=4), BeamSearch(beam=3, n_best=2, length_penalty="avg")):
        eager = fixed_beam_search(model, src, src_len, cfg, every=8)
        graphs = fixed_beam_search(model, src, src_len, cfg, every=8, chunks=cuda_graph)
        assert [[(h.ids, h.score) for h in s] for s in graphs] == [
            [(h.ids, h.score) for h in s] for s in eager
        ]
        for a, b in zip(eager, graphs):
            for x, y in zip(a, b):
                torch.testing.assert_close(y.attention, x.attention, rtol=0, atol=1e-6)


def test_cuda_started_beside_the_data_read_is_started_for_the_run():
    """In a fresh process, :func:`cuda_starting` leaves CUDA started on the main thread, with
    the device usable at once (the run's first tensor on it makes no context of its own)."""
    import subprocess
    import sys

    code = (
        "import torch\n"
        "from luong_lit.runtime import cuda_starting\n"
        "assert not torch.cuda.is_initialized()\n"
        "with cuda_starting(torch.device('cuda', 0)):\n"
        "    pass\n"
        "assert torch.cuda.is_initialized()\n"
        "print((torch.ones(2, device='cuda') * 2).sum().item())\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "4.0"
