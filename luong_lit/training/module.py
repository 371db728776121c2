"""A thin LightningModule around :class:`luong_lit.nn.Seq2Seq`: loss, logging, optimisation."""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from typing import Any

import lightning as L
import torch
from torch import Tensor
from torchmetrics import SumMetric

from luong_lit.data.batching import Batch, bucket_shape, pad_batch
from luong_lit.errors import ConfigError
from luong_lit.metrics.perplexity import ppl_from_nll
from luong_lit.nn import Seq2Seq
from luong_lit.nn.fast.static import check_static_encoder, static_nll
from luong_lit.nn.loss import check_label_smoothing, token_nll
from luong_lit.training.graphs import GraphedSteps, auto_graphs

log = logging.getLogger(__name__)
LOSS_NORMS = ("sentences", "nominal", "tokens")
GRAPH_MODES = ("auto", "capture", "static", "off")


def halving_factor(epoch: int, halve_after: int, convention: str = "paper") -> float:
    """LR multiplier for 0-based ``epoch``: halve every epoch after ``halve_after`` epochs.

    ``paper``: "after 5 epochs, we begin to halve the learning rate every epoch" (§4.1), so
    epoch 6 runs at 0.5. ``code``: nmt.matlab first halves at the end of epoch 6, so epoch 7
    runs at 0.5 (docs/paper_notes.md §8).
    """
    if convention not in ("paper", "code"):
        raise ConfigError(f"schedule convention must be 'paper' or 'code', got {convention!r}")
    first_halved = halve_after + (1 if convention == "code" else 0)  # 0-based epoch index
    return 0.5 ** max(0, epoch - first_halved + 1)


def anneal_factor(step: int, total_steps: int, anneal_steps: int) -> float:
    """LR multiplier for 0-based optimizer ``step``: 1, then linear down to 0 over the last
    ``anneal_steps`` of ``total_steps`` ("warmup-stable-decay" without the warmup). Step
    ``total_steps - anneal_steps`` is the last one at the full rate; the final step runs at
    ``1 / anneal_steps`` of it.
    """
    if not 0 < anneal_steps <= total_steps:
        raise ConfigError(f"anneal steps must be in [1, {total_steps}], got {anneal_steps}")
    return min(1.0, (total_steps - step) / anneal_steps)


class LuongLitModule(L.LightningModule):
    """Training wrapper. The network and the optimizer factory are injected.

    Args:
        net: the model.
        optimizer: a factory ``params -> torch.optim.Optimizer`` (Hydra ``_partial_``).
        halve_after: epochs before LR halving starts (paper: 5, or 8 with dropout); None: off.
        halve_convention: ``paper`` or ``code`` (see :func:`halving_factor`).
        anneal_epochs: instead of halving, keep the rate constant and lower it linearly to 0,
            step by step, over the last this many epochs (see :func:`anneal_factor`); None: off.
        loss_norm: ``sentences`` (sum of token NLL / batch size, paper §4.1), ``nominal``
            (divide by the configured batch size even for a short last batch, as nmt.matlab)
            or ``tokens`` (mean per token).
        nominal_batch_size: the batch size used by ``nominal``.
        clip_norm: rescale the gradient when its norm exceeds this (paper: 5); None: off.
        clip_exclude_embeddings: compute that norm without the embeddings (nmt.matlab) while
            still rescaling every parameter (docs/paper_notes.md §8).
        label_smoothing: smooth the training targets by this much (0: the paper's NLL).
            Validation and test perplexities are always of the plain NLL.
        graphs: how a training step runs (:mod:`luong_lit.training.graphs`): ``off``, each
            batch in its own shape; ``static``, padded to a bucket of ``buckets`` and computed
            without host synchronisation; ``capture``, the same captured in one CUDA graph
            per bucket (manual optimisation; uncaptured on a CPU); ``auto``, capture on one
            GPU in bf16-mixed, off elsewhere (:func:`.graphs.auto_graphs`).
        buckets: the source/target lengths batches are padded up to; a longer batch, or one
            with more rows than ``nominal_batch_size``, runs in its own shape.
        static_encoder: how the fixed-shape step encodes: ``auto`` (one whole-sequence LSTM
            call per layer under bf16-mixed when the encoder has no biases, else a masked step
            loop), ``masked`` or ``left_padded`` (:func:`~luong_lit.nn.fast.static.static_memory`).
        extra_state: plain data stored in every checkpoint (vocabularies, net config).
    """

    def __init__(
        self,
        net: Seq2Seq,
        optimizer: Callable[..., torch.optim.Optimizer],
        halve_after: int | None = None,
        halve_convention: str = "paper",
        anneal_epochs: float | None = None,
        loss_norm: str = "sentences",
        nominal_batch_size: int = 128,
        clip_norm: float | None = 5.0,
        clip_exclude_embeddings: bool = False,
        label_smoothing: float = 0.0,
        extra_state: dict[str, Any] | None = None,
        graphs: str = "off",
        buckets: list[int] | None = None,
        static_encoder: str = "auto",
    ) -> None:
        super().__init__()
        if graphs not in GRAPH_MODES:
            raise ConfigError(f"model.graphs must be one of {GRAPH_MODES}, got {graphs!r}")
        try:
            check_static_encoder(static_encoder, net)
        except ValueError as err:
            raise ConfigError(f"model.static_encoder={static_encoder}: {err}") from None
        self.static_encoder = static_encoder
        if graphs in ("capture", "static") and not buckets:
            raise ConfigError(f"model.graphs={graphs} needs model.buckets (lengths to pad to)")
        self.graphs, self.buckets, self._graphed = graphs, sorted(buckets or []), None
        if loss_norm not in LOSS_NORMS:
            raise ConfigError(f"loss_norm must be one of {LOSS_NORMS}, got {loss_norm!r}")
        halving_factor(0, halve_after or 0, halve_convention)  # validates the convention
        if halve_after is not None and anneal_epochs is not None:
            raise ConfigError(
                "model.halve_after and model.anneal_epochs are two learning-rate "
                "schedules; set one of them to null"
            )
        if anneal_epochs is not None and anneal_epochs <= 0:
            raise ConfigError(f"model.anneal_epochs must be positive, got {anneal_epochs}")
        self.net, self.optimizer_factory = net, optimizer
        self.halve_after, self.halve_convention = halve_after, halve_convention
        self.anneal_epochs = anneal_epochs
        self.loss_norm, self.nominal_batch_size = loss_norm, nominal_batch_size
        self.clip_norm, self.clip_exclude_embeddings = clip_norm, clip_exclude_embeddings
        check_label_smoothing(label_smoothing)
        self.label_smoothing = label_smoothing
        self.extra_state = dict(extra_state or {})
        self.val_nll, self.val_tokens = SumMetric(), SumMetric()

    def _normalise(self, nll: Tensor, batch: Batch, tokens: int) -> Tensor:
        denom = {"sentences": len(batch), "nominal": self.nominal_batch_size, "tokens": tokens}
        return nll / denom[self.loss_norm]

    def setup(self, stage: str) -> None:
        """``graphs=auto`` is resolved (:func:`auto_graphs`); capture optimises by hand."""
        t = self.trainer
        if self.graphs == "auto":
            device = t.strategy.root_device.type
            args = (device, t.precision, t.accumulate_grad_batches, t.world_size, self.buckets)
            self.graphs = auto_graphs(*args)
        if self.graphs == "capture":
            if "16-mixed" == str(self.trainer.precision):
                raise ConfigError("model.graphs=capture works with 32-true or bf16-mixed")
            if self.trainer.accumulate_grad_batches != 1:
                raise ConfigError("model.graphs=capture needs trainer.accumulate_grad_batches=1")
            if self.trainer.strategy.root_device.type != "cuda":
                log.warning("model.graphs=capture on a CPU: the same steps run, uncaptured")
            self.automatic_optimization = False

    def _padded(self, batch: Batch) -> Batch | None:
        """The batch padded up to its bucket; None when it runs in its own shape."""
        if self.graphs not in ("static", "capture"):
            return None
        shape = bucket_shape(batch, self.nominal_batch_size, self.buckets)
        return None if shape is None else pad_batch(batch, *shape)

    def _train_nll(self, batch: Batch, padded: Batch | None) -> tuple[Tensor, Any]:
        """Summed training NLL and token count, in the batch's shape or its bucket's."""
        if padded is None:
            return token_nll(self.net, batch, self.label_smoothing)
        p, enc = padded, self.static_encoder
        return static_nll(
            self.net, p.src, p.src_len, p.tgt_in, p.tgt_out, self.label_smoothing, enc
        )

    def _static_loss(self, src, src_len, tgt_in, tgt_out, scale) -> Tensor:
        args = (src, src_len, tgt_in, tgt_out, self.label_smoothing, self.static_encoder)
        nll, _ = static_nll(self.net, *args)
        return nll * scale  # scale = 1 / the loss's denominator, an input of the graph

    def _manual_step(self, batch: Batch) -> Tensor:
        """One optimisation step with the bucket's graph: gradients, clipping, update."""
        opt, padded = self.optimizers(), self._padded(batch)
        if padded is None:  # no bucket holds it: eager autograd
            nll, tokens = self._train_nll(batch, None)
            loss = self._normalise(nll, batch, tokens)
            opt.zero_grad(set_to_none=True)
            self.manual_backward(loss)
        else:
            if self._graphed is None:
                params = [p for p in self.parameters() if p.requires_grad]
                self._graphed = GraphedSteps(self._static_loss, params)
            tokens = None  # counted only when it is the denominator; a device tensor: no sync
            if self.loss_norm == "tokens":
                tokens = (batch.tgt_out != self.net.pad_id).sum()
            one = torch.ones((), device=batch.src.device)
            inputs = {k: getattr(padded, k) for k in ("src", "src_len", "tgt_in", "tgt_out")}
            loss = self._graphed({**inputs, "scale": self._normalise(one, batch, tokens)})
        self.configure_gradient_clipping(opt)
        opt.step()
        if self.anneal_epochs is not None:
            self.lr_schedulers().step()
        return loss

    def training_step(self, batch: Batch, batch_idx: int) -> Tensor | None:
        if not self.automatic_optimization:
            loss = self._manual_step(batch)
        else:
            nll, tokens = self._train_nll(batch, self._padded(batch))
            loss = self._normalise(nll, batch, tokens)
        self.log("train/loss", loss, prog_bar=True, batch_size=len(batch))
        if self.anneal_epochs is not None:  # the rate changes every step
            self.log("train/lr", self.optimizers().param_groups[0]["lr"], batch_size=len(batch))
        return loss

    def on_train_epoch_start(self) -> None:
        if self.anneal_epochs is None:
            self.log("train/lr", self.optimizers().param_groups[0]["lr"])

    def on_train_epoch_end(self) -> None:
        if not self.automatic_optimization and self.halve_after is not None:
            self.lr_schedulers().step()  # the epoch's halving, which Lightning does when automatic

    def validation_step(self, batch: Batch, batch_idx: int) -> None:
        nll, tokens = token_nll(self.net, batch)
        self.val_nll.update(nll)
        self.val_tokens.update(torch.tensor(float(tokens)))

    def on_validation_epoch_end(self) -> None:
        nll, tokens = float(self.val_nll.compute()), float(self.val_tokens.compute())
        self.val_nll.reset()
        self.val_tokens.reset()
        self.log("val/ppl", ppl_from_nll(nll, tokens), prog_bar=True, sync_dist=False)
        self.log("val/nll_per_token", nll / max(tokens, 1.0))

    def on_test_epoch_start(self) -> None:
        self._test_sums: dict[int, tuple[Tensor, int]] = {}  # per test set: summed NLL, tokens

    def test_step(self, batch: Batch, batch_idx: int, dataloader_idx: int = 0) -> None:
        nll, tokens = token_nll(self.net, batch)
        total, count = self._test_sums.get(dataloader_idx, (0.0, 0))
        self._test_sums[dataloader_idx] = (
            total + nll.detach(),
            count + tokens,
        )  # no sync per batch

    def on_test_epoch_end(self) -> None:
        """``test/<name>/ppl`` for every test set of the datamodule (in ``trainer.test``)."""
        dm = getattr(self.trainer, "datamodule", None)
        names = list(getattr(dm, "test_spec", None) or [])
        for idx, (nll, tokens) in sorted(self._test_sums.items()):
            name = names[idx] if idx < len(names) else str(idx)
            self.log(f"test/{name}/ppl", ppl_from_nll(float(nll), tokens), add_dataloader_idx=False)

    def configure_optimizers(self) -> Any:
        opt = self.optimizer_factory(params=self.parameters())
        if self.anneal_epochs is not None:
            total, anneal = self._anneal_plan()
            sched = torch.optim.lr_scheduler.LambdaLR(
                opt, lambda s: anneal_factor(s, total, anneal)
            )
            return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}
        if self.halve_after is None:
            return opt
        sched = torch.optim.lr_scheduler.LambdaLR(
            opt, lambda e: halving_factor(e, self.halve_after, self.halve_convention)
        )
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "epoch"}}

    def _anneal_plan(self) -> tuple[int, int]:
        """(optimizer steps in the whole run, steps in the annealed tail).

        Counted from the training loader's length, without iterating it: the trainer's own
        ``estimated_stepping_batches`` would start the first epoch's iterator here, before a
        resumed run has restored its position.
        """
        trainer = self.trainer
        if not trainer.max_epochs or trainer.max_epochs < 1:
            raise ConfigError("model.anneal_epochs needs a planned length: set trainer.max_epochs")
        batches = len(trainer.datamodule.train_dataloader())
        limit = trainer.limit_train_batches
        batches = min(batches, limit) if isinstance(limit, int) else int(batches * limit)
        per_epoch = math.ceil(batches / trainer.accumulate_grad_batches)
        total = per_epoch * trainer.max_epochs
        if trainer.max_steps and trainer.max_steps > 0:
            total = min(total, trainer.max_steps)
        return total, min(total, max(1, round(self.anneal_epochs * per_epoch)))

    def configure_gradient_clipping(
        self, optimizer, gradient_clip_val=None, gradient_clip_algorithm=None
    ) -> None:
        """Paper §4.1: rescale the gradient whenever its norm exceeds ``clip_norm``."""
        if self.clip_norm is None:
            return
        params = [p for p in self.parameters() if p.grad is not None]
        if self.clip_exclude_embeddings:
            emb = {id(self.net.encoder.embedding.weight), id(self.net.decoder.embedding.weight)}
            norm = torch.linalg.vector_norm(
                torch.stack([p.grad.norm() for p in params if id(p) not in emb])
            )
            if norm > self.clip_norm:
                for p in params:
                    p.grad.mul_(self.clip_norm / (norm + 1e-6))
            return
        torch.nn.utils.clip_grad_norm_(params, self.clip_norm)

    def on_save_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        checkpoint["luong_lit"] = self.extra_state
        checkpoint["rng_torch"] = torch.get_rng_state()

    def on_load_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        if "rng_torch" in checkpoint:  # dropout masks continue exactly as in an unbroken run
            torch.set_rng_state(checkpoint["rng_torch"])
