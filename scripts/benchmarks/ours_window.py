"""Training throughput of luong_lit on the main job, over a window of optimizer steps.

Runs ``python -m luong_lit train`` code (same config, same LightningModule, same data
pipeline) for ``warmup + steps`` steps without validation or checkpoints, and prints one
JSON line: non-pad target tokens (``</s>`` included) per wall second over the last
``steps`` steps, and on a GPU the peak memory allocated by torch.

    python -m scripts.benchmarks.ours_window --steps 200 --warmup 20 [overrides...]

``--plain`` runs the same steps (same config, model, batches, optimizer and clipping) in a plain
PyTorch loop instead of the Lightning trainer, to measure what the trainer costs (single-process
fp32 CPU only; the learning rate is held at its initial value, which does not change the cost).

Under data-parallel training (``trainer.strategy=ddp trainer.devices=2``) the tokens of all
ranks are summed over rank 0's window.

``--launches`` (on a GPU) profiles one more step after the window and adds how many kernels
and CUDA graphs that step launched, how many times the host waited for the device, and the
share of the step's wall time the GPU ran kernels (under the profiler, which slows the host:
a lower bound) (``engine.graphs=capture`` against ``engine.graphs=off`` shows what capture
saves).

``--save PATH`` writes a checkpoint of the model after its last step, for decoding benchmarks.

``--pad-vocab N`` appends never-seen symbols to both vocabularies until they hold N words, so
that a small training sample still gets the paper's 50K embedding and softmax sizes: the
cost of a step depends on the vocabulary size, not on which words occur.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import sys
import time
from pathlib import Path

import lightning as L
import torch

from scripts.benchmarks.launches import counts as launch_counts

REPO = Path(__file__).resolve().parents[2]


class Window(L.Callback):
    def __init__(self, warmup: int, steps: int) -> None:
        self.warmup, self.last, self.t0, self.tokens, self.t1 = (
            warmup,
            warmup + steps,
            None,
            0,
            None,
        )
        self.cuda = torch.cuda.is_available()

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        if self.cuda:
            torch.cuda.synchronize()  # time finished steps, not queued kernels
        step = trainer.global_step
        if step == self.warmup:
            self.t0, self.tokens = time.perf_counter(), 0
        elif self.warmup < step <= self.last:
            self.tokens += batch.num_tgt_tokens
            self.t1 = time.perf_counter()


class LaunchCount(L.Callback):
    """Kernel and graph launches, host waits and the GPU's busy share of the training step at
    global step ``at`` (:mod:`scripts.benchmarks.launches`)."""

    def __init__(self, at: int) -> None:
        self.at, self.prof, self.result = at, None, None

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx) -> None:
        if trainer.global_step == self.at and self.prof is None:
            acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
            self.prof = torch.profiler.profile(activities=acts)
            self.prof.__enter__()
            self.t0 = time.perf_counter()

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        if self.prof is None or self.result is not None:
            return
        torch.cuda.synchronize()
        wall = time.perf_counter() - self.t0
        self.prof.__exit__(None, None, None)
        self.result = launch_counts(self.prof, wall)


def pad_vocab(size: int) -> None:
    """Make every ``TranslationDataModule`` pad its vocabularies to ``size`` symbols."""
    from luong_lit.data.loading.datamodule import TranslationDataModule
    from luong_lit.data.vocab import Vocab

    setup = TranslationDataModule.setup

    def padded_setup(self, stage=None):
        setup(self, stage)
        for name in ("src_vocab", "tgt_vocab"):
            itos = getattr(self, name).itos
            extra = [f"<dummy{i}>" for i in range(max(0, size - len(itos)))]
            setattr(self, name, Vocab(itos + extra))

    TranslationDataModule.setup = padded_setup


def plain_step(module, opt, batch, clip: float | None) -> None:
    """One training step of a ``LuongLitModule`` without the trainer: its engine's loss (label
    smoothing and normalisation), backward, gradient clipping at ``clip``, the optimizer step."""
    net = module.net
    loss = module.engine.training_loss(net, batch, module.label_smoothing, module.denominator)
    opt.zero_grad()
    loss.backward()
    if clip:
        torch.nn.utils.clip_grad_norm_([p for p in net.parameters() if p.grad is not None], clip)
    opt.step()


def plain_optimizer(module):
    """The module's own optimizer over its parameters, the module in training mode. The
    learning rate stays at its initial value (no scheduler), which does not change the cost."""
    module.train()
    return module.optimizer_factory(params=module.parameters())


def step_seconds(module, batches, warmup: int, clip: float | None = 5.0) -> float:
    """Median seconds of the plain training steps over ``batches`` after the first ``warmup``."""
    opt, times = plain_optimizer(module), []
    for batch in batches:
        t0 = time.perf_counter()
        plain_step(module, opt, batch, clip)
        times.append(time.perf_counter() - t0)
    return statistics.median(times[warmup:])


def plain_window(dm, module, trainer, warmup: int, steps: int) -> dict:
    """Steps ``warmup+1 .. warmup+steps`` in a plain loop, timed from the end of step ``warmup``
    as :class:`Window` does."""
    if trainer.world_size > 1 or str(trainer.precision) != "32-true" or torch.cuda.is_available():
        raise SystemExit("--plain times the single-process fp32 CPU loop only")
    opt = plain_optimizer(module)
    tokens, t0 = 0, time.perf_counter()
    for i, batch in enumerate(itertools.islice(dm.train_dataloader(), warmup + steps)):
        plain_step(module, opt, batch, trainer.gradient_clip_val)
        tokens += batch.num_tgt_tokens
        if i == warmup - 1:
            tokens, t0 = 0, time.perf_counter()
    dt = time.perf_counter() - t0
    return {
        "tgt_tok_per_s": tokens / dt,
        "plain": True,
        "steps": steps,
        "seconds": dt,
        "tokens": tokens,
    }


def compose_train(overrides):
    """The ``train`` config of ``conf/`` without logger or callbacks, with ``overrides``,
    composed as ``python -m luong_lit train`` composes it (its resolvers registered)."""
    from luong_lit.config import compose

    return compose(["logger=none", "~callbacks", *overrides])


def window_config(args):
    """The training config for ``warmup + steps`` steps: no validation, checkpoints or logger."""
    return compose_train(
        [
            "paths.output_dir=" + os.environ.get("TMPDIR", "/tmp") + "/ours_window",
            f"trainer.max_steps={args.warmup + args.steps + int(args.launches)}",
            "trainer.limit_val_batches=0",
            "trainer.enable_checkpointing=false",
            "trainer.enable_progress_bar=false",
            *args.overrides,
        ]
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--pad-vocab", type=int, default=0, help="pad both vocabularies to N symbols")
    ap.add_argument(
        "--plain", action="store_true", help="a plain PyTorch loop instead of the trainer"
    )
    ap.add_argument("--launches", action="store_true", help="count one step's launches (GPU)")
    ap.add_argument("--save", help="write a checkpoint of the model after the window to this path")
    ap.add_argument("overrides", nargs="*")
    args = ap.parse_args()
    if args.pad_vocab:
        pad_vocab(args.pad_vocab)
    from luong_lit.runtime import configure_cpu_from
    from luong_lit.training.build import build
    from luong_lit.training.run_folder import RunFolder

    cfg = window_config(args)

    configure_cpu_from(cfg)
    dm, model, trainer = build(cfg, RunFolder.open(cfg))
    if args.plain:
        print(json.dumps(plain_window(dm, model, trainer, args.warmup, args.steps)))
        return
    window = Window(args.warmup, args.steps)
    trainer.callbacks.append(window)
    launches = LaunchCount(args.warmup + args.steps) if args.launches else None
    if launches is not None:
        trainer.callbacks.append(launches)
    trainer.fit(model, dm)
    if args.save:  # a model to decode with (e.g. scripts.benchmarks.beam_speed on a GPU)
        trainer.save_checkpoint(args.save)
    dt = window.t1 - window.t0
    if trainer.world_size > 1:  # data parallel: every rank's tokens count; rank 0 reports
        window.tokens = int(
            trainer.strategy.reduce(torch.tensor(float(window.tokens)), reduce_op="sum")
        )
        if trainer.global_rank:
            return
    out = {
        "tgt_tok_per_s": window.tokens / dt,
        "ranks": trainer.world_size,
        "steps": args.steps,
        "seconds": dt,
        "tokens": window.tokens,
        "vocab": [len(dm.src_vocab), len(dm.tgt_vocab)],
        "precision": str(trainer.precision),
        **model.engine.describe(),
    }
    if launches is not None and launches.result:
        out.update(launches.result)
    if torch.cuda.is_available():
        out.update(
            device=torch.cuda.get_device_name(),
            peak_gib=torch.cuda.max_memory_allocated() / 2**30,
            peak_reserved_gib=torch.cuda.max_memory_reserved() / 2**30,
        )
    print(json.dumps(out))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
