"""The ``fast`` engine: the model's parameters computed by :mod:`luong_lit.nn.fast`.

Training: the eager fast path (ragged encoder, unrolled input-feeding decoder, fused loss), or,
with ``graphs``, the same loss in fixed shapes, each batch padded up to one of ``buckets``:
``static`` computes it without host synchronisation; ``capture`` also records it in one CUDA
graph per bucket (:mod:`.graphs`); ``auto`` captures on one GPU in fp32 and bf16-mixed and
runs ``off`` elsewhere. Decoding: :class:`~luong_lit.nn.fast.stepper.FastStepper`, with 8-bit
products where ``int8`` asks for them (``output``: ``W_s``; ``all``: every decoder product;
CPU only, approximate). ``compile=step`` runs the fixed-shape step's input-feeding decoder step
through ``torch.compile`` (its LSTM cells and attention fused into fewer, larger kernels).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from functools import partial
from typing import Any

import torch
from torch import Tensor

from luong_lit.data.loading.batching import Batch
from luong_lit.data.loading.buckets import BucketPadding, bucket_shape, pad_batch
from luong_lit.data.vocab import EOS_ID
from luong_lit.decoding.ensemble import Ensemble
from luong_lit.engines.graphs import GraphedSteps, auto_graphs, replayed_loss
from luong_lit.engines.reference import Denominator, ReferenceEngine
from luong_lit.errors import ConfigError
from luong_lit.nn.decoder import Step
from luong_lit.nn.fast.compiled import compiled_step
from luong_lit.nn.fast.model import fast_nll
from luong_lit.nn.fast.quantize import PARTS, QuantizationUnavailable
from luong_lit.nn.fast.static import (
    STATIC_ENCODERS,
    check_static_encoder,
    loss_step,
    static_nll,
)
from luong_lit.nn.fast.stepper import FastStepper
from luong_lit.nn.interface import AnyDecodeModel
from luong_lit.nn.seq2seq import Seq2Seq
from luong_lit.validate import OptionError, integer, one_of

log = logging.getLogger(__name__)
GRAPH_MODES = ("auto", "capture", "static", "off")
COMPILE = ("off", "step")  # torch.compile: nothing, or the fixed-shape decoder step
SHAPES = ("square", "pair")  # a bucket: one length for source and target, or one each
INT8_PARTS = PARTS  # 8-bit decoding products: the output layer, or every decoder product
BUCKETS = (10, 15, 20, 25, 30, 40, 52)


def _check_options(
    graphs: str, buckets: Sequence[int], static_encoder: str, int8: str | None, compile_: str
) -> None:
    one_of("graphs", graphs, GRAPH_MODES)
    one_of("compile", compile_, COMPILE)
    one_of("static_encoder", static_encoder, STATIC_ENCODERS)
    if int8 is not None:
        one_of("int8", int8, PARTS)
    for n in buckets:
        integer("buckets", n, 1)
    if graphs in ("capture", "static") and not buckets:
        raise OptionError("buckets", list(buckets), f"is empty: graphs={graphs} pads to buckets")


def refuse_on_cpu(option: str, device: str) -> None:
    """A GPU option asked of a run without a GPU: refused in one line naming it."""
    if device != "cuda":
        raise ConfigError(
            f"{option} is a setting for a CUDA GPU, and this run is on {device}: leave it out "
            "(engine.graphs=static runs the same fixed-shape steps uncaptured on any device)"
        )


def _use_tf32(on: bool, device: str) -> None:
    """fp32 products and cuDNN's LSTMs in TensorFloat-32 on a GPU, or neither."""
    key = f"engine.tf32={str(on).lower()}"
    if device != "cuda":
        raise ConfigError(f"{key} is a setting of CUDA GPUs; this run is on {device}")
    torch.set_float32_matmul_precision("high" if on else "highest")
    torch.backends.cudnn.allow_tf32 = on
    log.info("%s: fp32 matrix products and cuDNN %s TensorFloat-32", key, "in" if on else "without")


class FastEngine(ReferenceEngine):
    """The reference model's results, computed faster (see the module docstring). Its options
    (``graphs``, ``buckets``, ``rows``, ``shapes``, ``static_encoder``, ``compile``, ``tf32``,
    ``int8``) are described once, in ``conf/engine/fast.yaml``; ``static_encoder``'s choice is
    :func:`~luong_lit.nn.fast.static.chosen_encoder`'s, and ``tf32`` is process-wide
    (``torch.set_float32_matmul_precision``, ``torch.backends.cudnn``)."""

    name = "fast"

    def __init__(
        self,
        graphs: str = "auto",
        buckets: Sequence[int] = BUCKETS,
        rows: int = 128,
        shapes: str = "square",
        static_encoder: str = "auto",
        int8: str | None = None,
        compile: str = "off",  # noqa: A002 - the config's key
        tf32: bool | None = None,
    ) -> None:
        buckets = sorted(buckets or [])
        _check_options(graphs, buckets, static_encoder, int8, compile)
        integer("rows", rows, 1)
        one_of("shapes", shapes, SHAPES)
        self.square = shapes == "square"
        if tf32 is not None and not isinstance(tf32, bool):
            raise OptionError("tf32", tf32, "must be true, false or null")
        self.tf32 = tf32
        self.graphs, self.buckets, self.rows = graphs, buckets, rows
        self.static_encoder, self.int8, self.compile = static_encoder, int8, compile
        self._step: Step | None = None  # the compiled decoder step, made at its first use
        self.mode = "off" if graphs == "auto" else graphs  # what runs; auto is resolved in setup
        self._graphed: GraphedSteps | None = None

    def setup(
        self,
        device: str = "cpu",
        precision: str = "32-true",
        accumulate: int = 1,
        world_size: int = 1,
    ) -> None:
        """Resolve ``graphs=auto`` (:func:`~.graphs.auto_graphs`) and check ``capture``."""
        if self.int8 and device != "cpu":
            raise ConfigError(f"engine.int8={self.int8}: 8-bit decoding runs on the CPU only")
        if self.tf32 is not None:
            _use_tf32(self.tf32, device)
        args = (device, precision, accumulate, world_size, self.buckets)
        self.mode = auto_graphs(*args) if self.graphs == "auto" else self.graphs
        if self.graphs == "capture":
            refuse_on_cpu("engine.graphs=capture", device)
        if self.compile != "off":
            refuse_on_cpu(f"engine.compile={self.compile}", device)
        if self.compile != "off" and self.mode == "off":
            raise ConfigError(
                f"engine.compile={self.compile} compiles the fixed-shape step: set "
                f"engine.graphs=static or capture (graphs={self.graphs} runs off here)"
            )
        if self.mode != "capture":
            return
        if str(precision) not in ("32-true", "bf16-mixed"):
            raise ConfigError(
                f"engine.graphs=capture works with 32-true or bf16-mixed, not {precision}"
            )
        if accumulate != 1:
            raise ConfigError("engine.graphs=capture needs trainer.accumulate_grad_batches=1")

    @property
    def captured_graphs(self) -> int:
        """How many CUDA graphs (one per bucket met so far) the captured step holds."""
        return len(self._graphed.graphs) if self._graphed is not None else 0

    def nll(self, net: Seq2Seq, batch: Batch, label_smoothing: float = 0.0) -> tuple[Tensor, Any]:
        return fast_nll(net, batch, label_smoothing)

    def padding(self) -> BucketPadding | None:
        """The training batches padded to their buckets by the loader (in its workers where it
        has them, then pinned on a GPU), not on the device at each step, where the steps run in
        fixed shapes (``graphs`` static or captured)."""
        if self.mode == "off":
            return None
        return BucketPadding(self.rows, tuple(self.buckets), self.square)

    def prepare(
        self, net: Seq2Seq, label_smoothing: float, shapes: Sequence[tuple[int, int, int]]
    ) -> None:
        """Where the steps are captured, every bucket of ``shapes`` (those the training batches
        can take) captured now, before the first step, not in the middle of training. A
        capture changes no weight or random state (:mod:`.graphs`); ``shapes=pair`` may hold
        many more buckets than ``square``, so the line says how many and their memory."""
        if self.mode != "capture" or not shapes:
            return
        device = next(net.parameters()).device
        graphed = self._graphed_steps(net, label_smoothing)
        start, before = time.perf_counter(), len(graphed.graphs)
        memory = torch.cuda.memory_reserved(device)
        for B, S, T in shapes:  # any ids do: no step reads values on the host
            src = torch.full((B, S), EOS_ID, dtype=torch.long, device=device)  # (B, S)
            words = torch.full((B, T), EOS_ID, dtype=torch.long, device=device)  # (B, T)
            src_len = torch.full((B,), S, dtype=torch.long, device=device)  # (B,)
            scale = torch.ones((), device=device)  # ()
            graphed.prepare(self._inputs(src, src_len, words, words, scale))
        grown = (torch.cuda.memory_reserved(device) - memory) / 2**20
        log.info("captured %d CUDA graphs, one a bucket, before the first step (%.1f s, "
                 "%.0f MiB more reserved)", len(graphed.graphs) - before,
                 time.perf_counter() - start, grown)  # fmt: skip

    def _graphed_steps(self, net: Seq2Seq, label_smoothing: float) -> GraphedSteps:
        if self._graphed is None:
            params = [p for p in net.parameters() if p.requires_grad]
            self._graphed = GraphedSteps(partial(self._scaled_nll, net, label_smoothing), params)
        return self._graphed

    @staticmethod
    def _inputs(
        src: Tensor, src_len: Tensor, tgt_in: Tensor, tgt_out: Tensor, scale: Tensor
    ) -> dict[str, Tensor]:
        """A captured step's inputs, by name: one place, so that a bucket prepared before
        training and the same bucket met in training are one graph."""
        return {"src": src, "src_len": src_len, "tgt_in": tgt_in, "tgt_out": tgt_out,
                "scale": scale}  # fmt: skip

    def training_loss(
        self, net: Seq2Seq, batch: Batch, label_smoothing: float, denominator: Denominator
    ) -> Tensor:
        """The eager fast loss, or the batch padded to its bucket (static or captured)."""
        shape = None
        if self.mode != "off":
            shape = bucket_shape(batch, self.rows, self.buckets, self.square)
        if shape is None:  # no bucket holds it: its own shape
            return super().training_loss(net, batch, label_smoothing, denominator)
        padded = pad_batch(batch, *shape)  # the batch itself where the loader padded it
        tensors = (padded.src, padded.src_len, padded.tgt_in, padded.tgt_out)
        if self.mode == "static":
            nll, n_tokens = self._static_nll(net, label_smoothing, *tensors)
            return nll / denominator(batch, n_tokens)
        graphed = self._graphed_steps(net, label_smoothing)
        n_tokens = (batch.tgt_out != net.pad_id).sum()  # a device tensor: no host sync
        scale = torch.ones((), device=batch.src.device) / denominator(batch, n_tokens)
        loss, grads = graphed(self._inputs(*tensors, scale))
        return replayed_loss(loss, grads, graphed.params)

    def _static_nll(
        self, net: Seq2Seq, label_smoothing: float, src: Tensor, src_len: Tensor, tgt_in: Tensor,
        tgt_out: Tensor,
    ) -> tuple[Tensor, Tensor]:  # fmt: skip
        try:
            check_static_encoder(self.static_encoder, net)
        except ValueError as err:
            raise ConfigError(f"engine.static_encoder={self.static_encoder}: {err}") from None
        if self.compile == "step" and self._step is None:
            self._step = compiled_step(loss_step)
        args = (src, src_len, tgt_in, tgt_out, label_smoothing, self.static_encoder, self._step)
        return static_nll(net, *args)

    def _scaled_nll(
        self, net: Seq2Seq, label_smoothing: float, src: Tensor, src_len: Tensor, tgt_in: Tensor,
        tgt_out: Tensor, scale: Tensor,
    ) -> Tensor:  # fmt: skip
        nll, _ = self._static_nll(net, label_smoothing, src, src_len, tgt_in, tgt_out)
        return nll * scale  # scale = 1 / the loss's denominator, an input of the graph

    def for_decoding(self, model: AnyDecodeModel, int8: str | None = None) -> AnyDecodeModel:
        """Each model (each ensemble member) as a :class:`FastStepper`; a model in training
        mode (dropout on) steps by itself."""
        int8 = int8 or self.int8
        if isinstance(model, Ensemble):
            return Ensemble([self.for_decoding(m, int8) for m in model.members], model.combine)
        if isinstance(model, FastStepper):  # already a decode-time form
            return model
        if model.training:
            if int8:
                raise ConfigError("int8 decoding needs a model in eval mode")
            return model
        if not isinstance(model, Seq2Seq):
            raise TypeError(f"the fast engine decodes a Seq2Seq, not a {type(model).__name__}")
        try:
            return FastStepper(model, int8)
        except QuantizationUnavailable as err:
            raise ConfigError(f"int8={int8}: {err}") from None

    def describe(self) -> dict[str, Any]:
        return {
            "engine": self.name,
            "graphs": self.mode,
            "shapes": "square" if self.square else "pair",
            "compile": self.compile,
            "int8": self.int8,
            "tf32": self.tf32,
        }
