"""Fixed-shape training steps, captured in CUDA graphs (one per bucket) on a GPU.

A batch is padded up to its bucket (:func:`~luong_lit.data.loading.buckets.bucket_shape`; by
the loader, :class:`~luong_lit.data.loading.buckets.BucketPadding`) and its loss computed by
:func:`luong_lit.nn.fast.static.static_nll`, which reads nothing on the host. On a GPU, the
forward pass over every target step, the loss and the backward pass of a bucket are captured
once in a CUDA graph (every bucket the training examples can fill, before the first step:
:meth:`GraphedSteps.prepare`) and replayed for every batch of that bucket: one launch instead
of thousands. The graph computes the gradients as outputs
(``torch.autograd.grad``), not into ``p.grad``: in a data-parallel run DDP's all-reduce hooks
fire when the trainer's backward hands them over, outside the graph. Dropout draws new masks
at every replay (the graph advances the generator's offset). Capturing draws nothing: the
warm-up passes' draws are given back, and the capture itself does not advance the generator,
so the masks of a run do not depend on where its graphs were captured (a run resumed from a
checkpoint captures them again).

The trainer still runs its own loop: :func:`replayed_loss` hands the replayed loss to it as an
ordinary autograd result whose backward pass gives the replayed gradients, so Lightning's
``zero_grad``, ``backward``, gradient clipping, optimizer step and learning-rate schedule act
as in eager training.

All graphs share one memory pool. That is safe here although buckets come in any order:
a graph's outputs (its loss and gradients) are read right after its replay, before any other
graph runs, and the tensors fed in are allocated outside the pool. Each graph keeps its own
gradient tensors, so memory grows with the number of buckets by one gradient per bucket.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, cast

import torch
from torch import Tensor


def auto_graphs(
    device: str, precision: str, accumulate: int, world_size: int, buckets: Sequence[int]
) -> str:
    """What ``graphs=auto`` runs: ``capture`` where it is checked to be exact (one CUDA device,
    fp32 or bf16-mixed, no gradient accumulation, buckets given), else ``off``.

    Every precision that needs no loss scaler is captured: a small model's eager step is bound
    by the host launching its ~2,600 kernels (the main job's fp32 step on an H200: ~78 ms, the
    GPU mostly idle), which one graph replay removes; the paper's model in fp32 is bound by
    the GPU's arithmetic, where capture costs only the graph's memory. fp16 (``16-mixed``)
    stays eager: its loss scaler skips steps on the host. Data-parallel runs stay eager unless
    ``engine.graphs=capture`` is asked for: the graph computes the gradients as its outputs and
    DDP's all-reduce runs when the trainer's backward hands them over, outside the graph
    (:class:`GraphedSteps`); its parity with DDP's eager step is checked on a CPU (the handover)
    and by the GPU stage ``ddp_capture`` (the graph), not yet on several GPUs.
    """
    ok = (
        device == "cuda"
        and str(precision) in ("32-true", "bf16-mixed")
        and accumulate == 1
        and world_size == 1
        and bool(buckets)
    )
    return "capture" if ok else "off"


class _Replayed(torch.autograd.Function):
    """The replayed loss as an autograd result; its backward gives the replayed gradients.

    The trainer differentiates the loss itself (``accumulate_grad_batches=1`` and no loss
    scaling, which capture requires), so the incoming gradient is 1 and each parameter's
    gradient is the graph's own tensor, handed over as a view rather than copied.
    """

    @staticmethod
    def forward(ctx: Any, loss: Tensor, grads: list[Tensor | None], *params: Tensor) -> Tensor:
        ctx.grads = grads
        return loss.detach().clone()  # the graph's own tensor is rewritten at its next replay

    @staticmethod
    def backward(ctx: Any, grad_out: Tensor) -> tuple[Tensor | None, ...]:
        grads = [None if g is None else g.view_as(g) for g in ctx.grads]
        return None, None, *grads


def replayed_loss(loss: Tensor, grads: Sequence[Tensor | None], params: Sequence[Tensor]) -> Tensor:
    """``loss`` whose ``backward()`` leaves ``grads`` in ``p.grad`` of ``params``.

    The graph's own ``loss`` comes in detached: its backward pass was recorded in the graph, and
    autograd must not follow it again. The trainer must clear gradients by setting them to None
    (Lightning's ``zero_grad`` does), or the handed-over views would be added to themselves.
    """
    replayed = _Replayed.apply(loss.detach(), list(grads), *params)  # type: ignore[no-untyped-call]
    return cast(Tensor, replayed)  # apply() is untyped: forward's result


@dataclass
class Captured:
    """One bucket's graph: its input tensors, its loss and the gradients it writes."""

    graph: torch.cuda.CUDAGraph
    inputs: dict[str, Tensor]
    loss: Tensor
    grads: list[Tensor | None]


class GraphedSteps:
    """``loss_fn(**inputs) -> loss`` and its backward, one CUDA graph per set of input shapes.

    ``__call__(inputs)`` takes a dict of CUDA tensors (a padded batch and anything the loss
    reads that changes from batch to batch, such as its normaliser as a 0-dim tensor), replays
    (capturing it first) the bucket's graph, and returns its loss and its gradients, one per
    parameter of ``params``.
    """

    def __init__(
        self, loss_fn: Callable[..., Tensor], params: Sequence[torch.nn.Parameter], warmup: int = 3
    ) -> None:
        self.loss_fn, self.params, self.warmup = loss_fn, list(params), warmup
        self.graphs: dict[tuple[object, ...], Captured] = {}  # by autocast, shapes and dtypes
        self.pool: Any = None  # torch.cuda.graph_pool_handle(), made at the first capture

    def __call__(self, inputs: dict[str, Tensor]) -> tuple[Tensor, list[Tensor | None]]:
        cap = self.prepare(inputs)
        for k, v in inputs.items():
            cap.inputs[k].copy_(v, non_blocking=True)
        cap.graph.replay()
        return cap.loss, cap.grads

    def prepare(self, inputs: dict[str, Tensor]) -> Captured:
        """The graph of these inputs' shapes and dtypes under the autocast in force, captured
        now if it is not yet; their values are not read (the captured step reads none on the
        host)."""
        autocast = torch.is_autocast_enabled("cuda"), torch.get_autocast_dtype("cuda")
        key = (autocast, *((k, tuple(v.shape), v.dtype) for k, v in sorted(inputs.items())))
        if key not in self.graphs:
            self.graphs[key] = self._capture(inputs)
        return self.graphs[key]

    def _run(self, inputs: dict[str, Tensor]) -> tuple[Tensor, list[Tensor | None]]:
        """The loss and its gradients, as outputs (``autograd.grad``), never accumulated into
        ``p.grad``: a data-parallel run's all-reduce hooks sit on that accumulation, so they
        fire when the trainer's backward hands the gradients over, outside the graph."""
        with _autocast_for_capture():
            loss = self.loss_fn(**inputs)
        grads = torch.autograd.grad(loss, self.params, allow_unused=True)
        return loss, list(grads)

    def _capture(self, inputs: dict[str, Tensor]) -> Captured:
        """Warm up on a side stream, then record forward, loss and backward."""
        inputs = {k: v.clone() for k, v in inputs.items()}  # the graph's own, outside its pool
        rng = torch.cuda.get_rng_state()  # the warm-up passes draw dropout masks: give them back
        side = torch.cuda.Stream()  # type: ignore[no-untyped-call]
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(self.warmup):
                self._run(inputs)
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.set_rng_state(rng)
        if self.pool is None:
            self.pool = torch.cuda.graph_pool_handle()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, pool=self.pool):
            loss, grads = self._run(inputs)  # the trainer's backward hands them over
        return Captured(graph, inputs, loss, grads)


class _autocast_for_capture:
    """Re-enter the autocast in force, without its weight cache (which a graph cannot hold)."""

    def __enter__(self) -> None:
        self.ctx: torch.autocast | None = None
        if torch.is_autocast_enabled("cuda"):
            dtype = torch.get_autocast_dtype("cuda")
            self.ctx = torch.autocast("cuda", dtype=dtype, cache_enabled=False)
            self.ctx.__enter__()  # type: ignore[no-untyped-call]

    def __exit__(self, *exc: object) -> None:
        if self.ctx is not None:
            self.ctx.__exit__(*exc)
