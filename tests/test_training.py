"""``luong_lit.training``: runs of every combination, schedules, the loss, callbacks (BLEU,
heatmaps, loggers), DDP on two CPU processes, and a copy task learnt."""

from __future__ import annotations

import csv
import itertools
import math
import os
import re
import subprocess
import sys

import pytest
import torch
from conftest import REPO, compose_cfg, small_model, tiny_overrides, write_corpus

from luong_lit.checkpoint import load_model
from luong_lit.data.loading.batching import collate
from luong_lit.decoding import greedy_decode
from luong_lit.decoding.search import BeamSearch
from luong_lit.engines import FastEngine
from luong_lit.nn import ConfigError
from luong_lit.nn.loss import token_nll
from luong_lit.training.module import LuongLitModule
from luong_lit.training.run import train
from luong_lit.training.schedules import Halving, LinearDecay, anneal_factor, halving_factor

# ------------------------------------------------------------------ tiny runs


COMBOS = list(
    itertools.product(
        ["none", "global", "local_m", "local_p"],
        ["dot", "general", "concat", "location"],
        [True, False],
    )
)


def is_valid(att, score, feed):
    if att == "none":
        return not feed
    return att == "global" or score != "location"


def sample(n: int, g: torch.Generator):
    """Random sentences of 5–8 words over 10 symbols (ids 4..13); the target is a copy."""
    out = []
    for i in range(n):
        L = int(torch.randint(5, 9, (1,), generator=g))
        s = torch.randint(4, 14, (L,), generator=g).tolist()
        out.append((i, s, s))
    return out


def test_training_draws_attention_heatmaps_and_learning_curves(runs, tmp_path):
    from luong_lit.analysis.figures import plot_learning_curves, read_metrics

    pngs = sorted((runs["global"] / "attention").glob("*.png"))
    assert [p.name for p in pngs] == [
        "epoch001_dev0.png",
        "epoch001_dev1.png",
        "epoch002_dev0.png",
        "epoch002_dev1.png",
    ]
    assert all(p.read_bytes()[:4] == b"\x89PNG" for p in pngs)
    assert len(read_metrics(runs["global"])["val/nll_per_token"]) == 2
    fig5 = plot_learning_curves(runs, tmp_path / "fig5.png")
    assert fig5.stat().st_size > 1000


# ------------------------------------------------------------------ loggers and notebook
def test_wandb_offline_writes_a_run_and_needs_no_network(toy_corpus, tmp_path):
    pytest.importorskip("wandb")
    env = {
        **os.environ,
        "WANDB_MODE": "offline",
        "WANDB_BASE_URL": "http://127.0.0.1:9",
        "WANDB_INIT_TIMEOUT": "20",
        "OMP_NUM_THREADS": "1",
        "PYTHONWARNINGS": "ignore",
    }
    args = [a for a in tiny_overrides(toy_corpus) if not a.startswith("logger=")]
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "luong_lit.train",
            *args,
            "logger=wandb",
            "trainer.max_epochs=1",
            "callbacks.attention_heatmaps.every_n_epochs=1",
            f"hydra.run.dir={tmp_path}",
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert res.returncode == 0, res.stderr[-2000:]
    runs = list((tmp_path / "wandb").glob("offline-run-*"))
    assert len(runs) == 1 and list(runs[0].glob("run-*.wandb"))
    assert list((tmp_path / "attention").glob("*.png"))


@pytest.mark.parametrize("att,score,feed", COMBOS)
def test_fast_dev_run_every_combination(att, score, feed, toy_corpus, tmp_path):
    cfg = compose_cfg(
        tiny_overrides(toy_corpus)
        + [f"attention={att}", f"score={score}", f"feed_input={str(feed).lower()}", "debug=fdr"],
        tmp_path,
    )
    if not is_valid(att, score, feed):
        with pytest.raises(ConfigError, match=f"attention={att}"):
            train(cfg)
        return
    metrics = train(cfg)
    assert torch.isfinite(torch.tensor(metrics["train/loss"]))


def test_schedule_halving_paper_and_code():
    paper = [halving_factor(e, 5, "paper") for e in range(10)]
    code = [halving_factor(e, 5, "code") for e in range(10)]
    assert paper == [1, 1, 1, 1, 1, 0.5, 0.25, 0.125, 0.0625, 0.03125]
    assert code == [1, 1, 1, 1, 1, 1, 0.5, 0.25, 0.125, 0.0625]


def test_schedule_anneal_is_linear_to_zero_over_the_tail():
    factors = [anneal_factor(s, 10, 4) for s in range(10)]
    assert factors == [1, 1, 1, 1, 1, 1, 1, 0.75, 0.5, 0.25]  # naive: (10 - s) / 4 once s > 6
    with pytest.raises(ValueError, match="epochs=0 is out of range"):
        LinearDecay(epochs=0)
    with pytest.raises(ValueError, match="after=-1 is out of range"):
        Halving(after=-1)
    with pytest.raises(ValueError, match="convention='book' is unknown"):
        Halving(convention="book")


@pytest.mark.filterwarnings("ignore:.*self.trainer.*reference is not registered")
def test_label_smoothing_shapes_the_training_loss_only():
    """The training loss is the smoothed loss / batch size; validation ppl stays the plain NLL."""
    from torch.nn import functional as F

    from luong_lit.data.loading.batching import collate

    torch.manual_seed(0)
    net = small_model(num_layers=1).eval()
    batch = collate([(0, [4, 5, 6], [7, 8]), (1, [9, 4], [5, 6, 7])])
    module = LuongLitModule(net, FastEngine(), torch.optim.Adam, label_smoothing=0.1)
    logits = net.logits(net(batch.src, batch.src_len, batch.tgt_in)[0])  # (B, T, V)
    mask = batch.tgt_out != 0

    def nll(eps: float):
        return F.cross_entropy(
            logits[mask], batch.tgt_out[mask], reduction="sum", label_smoothing=eps
        )

    torch.testing.assert_close(module.training_step(batch, 0), nll(0.1) / 2)  # 2 sentences
    module.validation_step(batch, 0)
    torch.testing.assert_close(module.val_nll.compute(), nll(0.0))
    with pytest.raises(ValueError, match="label_smoothing=1.5 is out of range"):
        LuongLitModule(net, FastEngine(), torch.optim.Adam, label_smoothing=1.5)


@pytest.mark.slow
@pytest.mark.xdist_group("ranks")
def test_ddp_sim_two_cpu_processes(toy_corpus, tmp_path):
    """Two ranks (ddp_spawn on CPU), each taking every second batch; a best checkpoint results."""
    cfg = compose_cfg(
        tiny_overrides(toy_corpus)
        + ["trainer=ddp_sim", "trainer.max_epochs=1", "test_after_training=false"],
        tmp_path,
    )
    train(cfg)
    net, _, tgt_vocab, _ = load_model(tmp_path / "checkpoints" / "best.ckpt")
    assert net.decoder.W_s.out_features == len(tgt_vocab)


def test_each_epoch_of_a_training_run_draws_its_own_batch_order(toy_corpus, tmp_path):
    """The trainer tells only a sampler of the epoch, never a batch sampler: the loader must,
    or every epoch repeats the first one's order."""
    import lightning as L

    from luong_lit.training.build import build
    from luong_lit.training.run_folder import RunFolder

    cfg = compose_cfg(
        tiny_overrides(toy_corpus)
        + ["trainer.max_epochs=3", "test_after_training=false", "data.batch_size=4"],
        tmp_path,
    )
    dm, model, trainer = build(cfg, RunFolder.open(cfg))
    seen: dict[int, list[list[int]]] = {}

    class Record(L.Callback):
        def on_train_batch_start(self, trainer, pl_module, batch, batch_idx) -> None:
            seen.setdefault(trainer.current_epoch, []).append(batch.index.tolist())

    trainer.callbacks.append(Record())
    trainer.fit(model, dm)
    assert len(seen) == 3
    flat = [sorted(i for b in seen[e] for i in b) for e in range(3)]
    assert flat[0] == flat[1] == flat[2] == list(range(64))  # every pair once an epoch...
    assert seen[0] != seen[1] != seen[2]  # ...in a new order each epoch


@pytest.mark.parametrize(
    "attention,score", [("global", "general"), ("local_m", "dot"), ("local_p", "general")]
)
def test_copy_task_learns_with_diagonal_attention(attention, score):
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(0)
    model = small_model(
        src_vocab_size=14,
        tgt_vocab_size=14,
        embed_size=32,
        hidden_size=64,
        num_layers=1,
        attention=attention,
        score=score,
    )
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(300):
        batch = collate(sample(32, g))
        nll, tokens = token_nll(model, batch)
        opt.zero_grad()
        (nll / tokens).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        opt.step()
    model.eval()
    test = collate(sample(64, g))
    hyps, attn = greedy_decode(model, test.src, test.src_len, return_attention=True)
    correct = total = diag = 0
    for b, hyp in enumerate(hyps):
        ref = test.src[b, : int(test.src_len[b])].tolist()
        correct += sum(h == r for h, r in zip(hyp, ref))
        total += len(ref)
        # a_t at step t predicts y_t = x_t: argmax over source positions is t
        steps = min(len(ref), attn[b].size(0))
        diag += sum(int(attn[b][t].argmax()) == t for t in range(steps))
    assert correct / total >= 0.9
    assert diag / total >= 0.9


def split_bleu(inference, split, tokenizer=None) -> dict[str, float]:
    """Tokenised BLEU of beam 3's translations of ``split``, before and after unk replacement."""
    from luong_lit.metrics.bleu import bleu_lines, corpus_bleu_tok

    out = inference.split(split, search=BeamSearch(beam=3), batch_size=64, replace_unk=True)
    refs = bleu_lines(split.tgt_tokens[: len(out.words)], tokenizer)
    return {"bleu": corpus_bleu_tok(bleu_lines(out.words, tokenizer), refs),
            "bleu_unk": corpus_bleu_tok(bleu_lines(out.replaced, tokenizer), refs)}  # fmt: skip


def test_beam_callback_logs_dev_bleu_before_and_after_unk_replacement(trained):
    """The last validation's beam BLEU, before and after unk replacement, is the decoder's on the
    dev set with the weights of that epoch (``last.ckpt``), decoded again here."""
    from luong_lit.checkpoint import load_model
    from luong_lit.data.loading.model_data import datamodule_for
    from luong_lit.inference import Inference

    out, _, metrics = trained
    net, _, tgt_vocab, meta = load_model(out / "checkpoints" / "last.ckpt")
    dm = datamodule_for(meta)
    direct = split_bleu(Inference(net, tgt_vocab), dm.splits["dev"], dm.tokenizers.get("tgt"))
    assert metrics["val/bleu_beam"] == pytest.approx(direct["bleu"], abs=1e-4)
    assert metrics["val/bleu_beam_unk"] == pytest.approx(direct["bleu_unk"], abs=1e-4)


def test_trainer_test_logs_ppl_and_beam_bleu_of_every_test_set(toy_corpus, tmp_path):
    from luong_lit.inference import Inference
    from luong_lit.metrics.perplexity import perplexity
    from luong_lit.training.build import build
    from luong_lit.training.run_folder import RunFolder

    test = write_corpus(tmp_path / "data", "test", 12, 5)
    cfg = compose_cfg(
        tiny_overrides(toy_corpus)
        + [
            "trainer.max_epochs=1",
            "model.net.hidden_size=16",
            "model.net.embed_size=16",
            f"+data.test.a.src={test['src']}",
            f"+data.test.a.tgt={test['tgt']}",
            f"+data.test.b.src={toy_corpus['dev']['src']}",
            f"+data.test.b.tgt={toy_corpus['dev']['tgt']}",
            "callbacks.beam_bleu.every_n_epochs=0",
            "callbacks.beam_bleu.beam=3",
            "logger=none",
        ],
        tmp_path,
    )
    dm, model, trainer = build(cfg, RunFolder.open(cfg))
    trainer.fit(model, dm)
    res = trainer.test(model, dm, verbose=False)[0]
    net = model.net.eval()
    for name in ("a", "b"):
        split = dm.splits[name]
        assert res[f"test/{name}/ppl"] == pytest.approx(perplexity(net, split.examples()), rel=1e-4)
        direct = split_bleu(Inference(net, dm.tgt_vocab), split)
        assert res[f"test/{name}/bleu_beam"] == pytest.approx(direct["bleu"], abs=1e-6)
        assert res[f"test/{name}/bleu_beam_unk"] == pytest.approx(direct["bleu_unk"], abs=1e-6)


# ------------------------------------------------------------------ mixed precision
def test_the_main_jobs_model_trains_in_bf16_mixed_on_the_cpu_with_its_fused_adam(
    toy_corpus, tmp_path, caplog
):
    """bf16-mixed with the main job's fused Adam and the paper's clipping at 5: Lightning alone
    refuses to clip a fused optimizer under mixed precision; the kit clips it itself."""
    drop = ("model.net.embed_size", "model.net.hidden_size", "model.net.num_layers", "logger")
    overrides = [o for o in tiny_overrides(toy_corpus) if not o.startswith(drop)]
    extra = ["trainer.precision=bf16-mixed", "trainer.max_steps=4", "test_after_training=false",
             "logger=csv", "trainer.log_every_n_steps=1"]  # fmt: skip
    cfg = compose_cfg(overrides + extra, tmp_path)
    assert cfg.model.net.hidden_size == 256 and cfg.model.optimizer.fused  # the main job's
    with caplog.at_level("WARNING", logger="luong_lit.training.precision"):
        train(cfg)
    assert sum("on the CPU trains slower" in r.message for r in caplog.records) == 1
    with open(tmp_path / "csv" / "metrics.csv", newline="") as fh:
        rows = [r for r in csv.DictReader(fh) if r.get("train/loss")]
    losses = [float(r["train/loss"]) for r in rows]
    assert len(losses) >= 1 and all(math.isfinite(x) for x in losses)
    assert (tmp_path / "checkpoints" / "last.ckpt").is_file()


def _clipping_trainer(precision: str, scaler=None, clip=1.0):
    from types import SimpleNamespace

    plugin = SimpleNamespace(precision=precision, scaler=scaler)
    return SimpleNamespace(precision_plugin=plugin, gradient_clip_val=clip)


@pytest.mark.parametrize("algorithm", ["norm", "value"])
def test_a_fused_optimizers_gradients_are_clipped_under_bf16_as_lightning_clips_them(algorithm):
    from luong_lit.training.precision import clip_unscaled

    torch.manual_seed(0)
    params = [torch.nn.Parameter(torch.randn(5, 3)) for _ in range(3)]
    copies = [torch.nn.Parameter(p.detach().clone()) for p in params]
    for p, c in zip(params, copies):
        p.grad = torch.randn_like(p) * 10
        c.grad = p.grad.clone()
    clip = (
        torch.nn.utils.clip_grad_norm_ if algorithm == "norm" else torch.nn.utils.clip_grad_value_
    )
    clip(copies, 1.0)  # what Lightning's own clipping calls
    fused = torch.optim.Adam(params, fused=True)
    assert clip_unscaled(_clipping_trainer("bf16-mixed"), fused, 1.0, algorithm)
    for p, c in zip(params, copies):
        torch.testing.assert_close(p.grad, c.grad)
    plain = torch.optim.Adam(params, fused=False)
    assert not clip_unscaled(_clipping_trainer("bf16-mixed"), plain, 1.0, algorithm)
    assert not clip_unscaled(_clipping_trainer("32-true"), fused, 1.0, algorithm)


def test_under_a_loss_scaler_the_optimizer_runs_unfused_so_its_gradients_are_unscaled_first():
    from functools import partial

    from luong_lit.training.precision import plain_if_scaled

    adam = partial(torch.optim.Adam, lr=1e-3, fused=True)
    scaled = _clipping_trainer("16-mixed", scaler=object())
    assert plain_if_scaled(scaled, adam) == {"fused": False}
    assert plain_if_scaled(_clipping_trainer("16-mixed", scaler=object(), clip=0), adam) == {}
    assert plain_if_scaled(_clipping_trainer("bf16-mixed"), adam) == {}


# ------------------------------------------------------------------ what a run shows
def test_a_run_written_to_a_file_names_its_folder_first_and_logs_its_progress(toy_corpus, tmp_path):
    """Standard output and error to a file, the bar asked for: no bar (not a frame of one), the
    run's folder on the first line, a progress line every 5 steps counting to max_steps, and
    a line for each validation."""
    run = tmp_path / "run"
    args = [*tiny_overrides(toy_corpus), "trainer.enable_progress_bar=true", "trainer.max_epochs=3",
            "++trainer.max_steps=20", "callbacks.progress.every_n_steps=5",
            "callbacks.progress.read_every_n_steps=5", "callbacks.progress.every_n_seconds=null",
            f"hydra.run.dir={run}"]  # fmt: skip
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONWARNINGS": "ignore"}
    with open(tmp_path / "train.log", "w") as out:
        res = subprocess.run([sys.executable, "-m", "luong_lit.train", *args], cwd=REPO, env=env,
                             stdout=out, stderr=subprocess.STDOUT, timeout=240)  # fmt: skip
    text = (tmp_path / "train.log").read_text()
    assert res.returncode == 0, text[-2000:]
    lines = text.splitlines()
    start = f"run folder: {run.resolve()} (if it stops, it resumes with: "
    assert lines[0].startswith(start), lines[0]
    said = [x.split(" - ", 1)[1] for x in lines if "][luong_lit.training.progress][INFO]" in x]
    line = re.compile(r"step (\d+)/20 \| epoch (\d)/3 \| loss/sentence \d+\.\d{4} \| "
                      r"[\d,]+ tok/s \| elapsed \d:\d\d:\d\d \| ETA \d:\d\d:\d\d")  # fmt: skip
    steps = [line.fullmatch(x) for x in said if x.startswith("step ")]
    assert all(steps) and [m.groups() for m in steps] == [("5", "1"), ("10", "2"), ("15", "2"),
                                                        ("20", "3")], said  # fmt: skip
    validated = [x for x in said if " validated " in x]
    assert [x.split(":")[0] for x in validated] == ["epoch 1 validated at step 8",
                                                    "epoch 2 validated at step 16"]  # fmt: skip
    assert all("val/ppl " in x for x in validated)
    assert "\r" not in text and "\x1b" not in text and "it/s" not in text  # no bar


def test_the_bar_is_drawn_only_at_a_terminal_and_the_loss_read_every_n_steps(monkeypatch):
    from types import SimpleNamespace

    from lightning.pytorch.callbacks import TQDMProgressBar

    from luong_lit.training import progress
    from luong_lit.training.instantiate import progress_bar

    lines = progress.ProgressLog(every_n_steps=1, read_every_n_steps=10)
    for terminal, wanted, drawn in [(False, True, False), (True, False, False), (True, True, True)]:
        monkeypatch.setattr(progress, "is_terminal", lambda t=terminal: t)
        bar = progress_bar([lines], wanted)
        assert (bar is not None) == drawn
    assert isinstance(bar, TQDMProgressBar) and bar.refresh_rate == 10
    monkeypatch.setitem(sys.modules, "rich", None)  # a wheel installed without rich: the same bar
    assert progress_bar([lines], True).refresh_rate == 10
    reads = []
    monkeypatch.setattr(torch.Tensor, "__float__", lambda t: reads.append(1) or t.item())
    trainer = SimpleNamespace(progress_bar_callback=None, is_global_zero=True, global_step=0,
                              estimated_stepping_batches=100, max_epochs=2, current_epoch=0,
                              accumulate_grad_batches=1)  # fmt: skip
    lines.on_train_start(trainer, None)
    for step in range(1, 26):  # a line asked for at every step: the loss read every 10th
        trainer.global_step = step
        lines.on_train_batch_end(trainer, None, {"loss": torch.tensor(2.0)}, None, step - 1)
    assert len(reads) == 2


def test_clipping_without_embeddings_takes_their_norm_out_and_rescales_them_too():
    """``model.clip_exclude_embeddings``: the norm of §4.1 leaves out both embeddings, and
    every gradient, theirs too, is rescaled by the same factor when it is over the limit."""
    from luong_lit.training.precision import clip_without_embeddings

    net = small_model()
    for i, p in enumerate(net.parameters()):
        p.grad = torch.full_like(p, 0.1 * (i + 1))
    emb = {id(net.encoder.embedding.weight), id(net.decoder.embedding.weight)}
    before = {id(p): p.grad.clone() for p in net.parameters()}
    rest = torch.linalg.vector_norm(
        torch.stack([p.grad.norm() for p in net.parameters() if id(p) not in emb])
    )
    holder = type("Module", (), {"net": net, "parameters": net.parameters})()
    clip_without_embeddings(holder, float(rest) / 2)
    for p in net.parameters():  # one factor for all, the embeddings' included
        factor = (float(rest) / 2) / (float(rest) + 1e-6)
        assert torch.allclose(p.grad, before[id(p)] * factor), p.shape
    clipped = {id(p): p.grad.clone() for p in net.parameters()}
    clip_without_embeddings(holder, 1e9)  # under the limit: left as they are
    assert all(torch.equal(p.grad, clipped[id(p)]) for p in net.parameters())


# ------------------------------------------------------------------ CUDA's start


def test_cuda_starts_on_its_own_thread_while_the_data_are_read(monkeypatch):
    """On a CUDA device the start runs beside the body (each waits for the other: run one after
    the other, they time out) and is waited for at the end; its error is the run's."""
    import threading

    from luong_lit import runtime

    body_ran, started = threading.Event(), threading.Event()
    threads: list[str] = []

    def start(device, failed):
        threads.append(threading.current_thread().name)
        if not body_ran.wait(5):
            failed.append(RuntimeError("the body did not run meanwhile"))
        started.set()

    monkeypatch.setattr(runtime, "_start_cuda", start)
    with runtime.cuda_starting(torch.device("cuda", 0)):
        body_ran.set()  # the data read, meanwhile
        assert started.wait(5), "CUDA's start did not run beside the body"
    assert threads == ["cuda-start"]

    def fails(device, failed):
        failed.append(RuntimeError("no CUDA driver"))

    monkeypatch.setattr(runtime, "_start_cuda", fails)
    with pytest.raises(RuntimeError, match="no CUDA driver"):
        with runtime.cuda_starting(torch.device("cuda", 0)):
            pass
    for nothing in (torch.device("cpu"), None):  # a CPU run, or several ranks: no thread
        with runtime.cuda_starting(nothing):
            assert all(t.name != "cuda-start" for t in threading.enumerate())
