"""A thin LightningModule: it wires the network, the engine, the loss, the optimizer and the
learning-rate schedule, and Lightning runs the loop (backward pass, clipping, steps)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import lightning as L
import torch
from torch import Tensor
from torchmetrics import SumMetric

from luong_lit.checkpoint.meta import KEY as META_KEY
from luong_lit.data.loading.batching import Batch
from luong_lit.metrics.perplexity import ppl_from_nll
from luong_lit.nn import Seq2Seq
from luong_lit.training.figures import test_perplexities
from luong_lit.training.loss_norm import LOSS_NORMS, loss_denominator
from luong_lit.training.precision import clip_unscaled, clip_without_embeddings, plain_if_scaled
from luong_lit.training.random_state import load_rng, save_rng
from luong_lit.training.schedules import Plan
from luong_lit.validate import integer, one_of, rate


class LuongLitModule(L.LightningModule):
    """Training wrapper. The network, its engine and the optimizer factory are injected.

    Args:
        net: the model (plain PyTorch, :class:`luong_lit.nn.Seq2Seq`).
        engine: how the model is computed (:mod:`luong_lit.engines`).
        optimizer: a factory ``params -> torch.optim.Optimizer`` (Hydra ``_partial_``).
        scheduler: None, or a factory ``(optimizer, plan) -> Lightning scheduler description``
            (:mod:`luong_lit.training.schedules`; Hydra ``_partial_``).
        loss_norm: ``sentences`` (sum of token NLL / batch size, paper §4.1), ``nominal``
            (divide by ``nominal_batch_size`` even for a short last batch, as nmt.matlab) or
            ``tokens`` (mean per token).
        label_smoothing: smooth the training targets by this much (0: the paper's NLL).
            Validation and test perplexities are always of the plain NLL.
        clip_exclude_embeddings: compute the clipping norm (``trainer.gradient_clip_val``)
            without the embeddings, as nmt.matlab, while still rescaling every parameter
            (docs/paper_notes.md §8).
        extra_state: the model's description, stored in every checkpoint (plain data:
            :meth:`~luong_lit.checkpoint.meta.CheckpointMeta.to_dict`).
    """

    def __init__(
        self,
        net: Seq2Seq,
        engine,
        optimizer: Callable[..., torch.optim.Optimizer],
        scheduler: Callable[..., dict] | None = None,
        loss_norm: str = "sentences",
        nominal_batch_size: int = 128,
        label_smoothing: float = 0.0,
        clip_exclude_embeddings: bool = False,
        extra_state: dict[str, Any] | None = None,
    ) -> None:
        super().__init__()
        one_of("loss_norm", loss_norm, LOSS_NORMS)
        integer("nominal_batch_size", nominal_batch_size, 1)
        rate("label_smoothing", label_smoothing)
        self.net, self.engine = net, engine
        self.optimizer_factory, self.scheduler_factory = optimizer, scheduler
        self.loss_norm, self.nominal_batch_size = loss_norm, nominal_batch_size
        self.label_smoothing = label_smoothing
        self.clip_exclude_embeddings = clip_exclude_embeddings
        self.extra_state = dict(extra_state or {})
        self.val_nll, self.val_tokens = SumMetric(), SumMetric()
        self.ended = False  # resumed after the validation that ended training (on_train_start)
        self.skip_rest = False  # a rank's evaluation share left undone: a signal (signals.py)

    def setup(self, stage: str) -> None:
        """The engine learns the device and precision (``graphs=auto`` is resolved here)."""
        t = self.trainer
        device = t.strategy.root_device.type
        self.engine.setup(device, t.precision, t.accumulate_grad_batches, t.world_size)
        if stage == "fit" and hasattr(t.datamodule, "pad_to"):  # padded where batches are made
            t.datamodule.pad_to = self.engine.padding()

    def denominator(self, batch: Batch, tokens) -> Any:
        """What a batch's summed NLL is divided by (:func:`.loss_norm.loss_denominator`)."""
        try:
            k = self.trainer.accumulate_grad_batches
        except RuntimeError:  # a module used outside a trainer: no accumulation
            k = 1
        return loss_denominator(self.loss_norm, batch, tokens, k, self.nominal_batch_size)

    def on_train_start(self) -> None:
        """A run resumed from the checkpoint of the validation that ended its training (early
        stopping, or the schedule's end) trains no more: its epoch ends as the unbroken run's
        did (:meth:`on_train_batch_start`, :meth:`on_train_epoch_end`), and the test follows.
        Else the engine prepares for every shape the training batches can take (a captured
        step: one CUDA graph a bucket)."""
        from luong_lit.training.captures import prepare_buckets
        from luong_lit.training.stopping import training_ended

        self.ended = bool(self.trainer.ckpt_path) and training_ended(self.trainer)
        if not self.ended:
            prepare_buckets(self)

    def on_train_batch_start(self, batch: Batch, batch_idx: int) -> int | None:
        """The rate this step runs at, made on the device (a number would be copied, the host
        waiting); -1 (the epoch ends) in a run whose training has ended (:meth:`on_train_start`)."""
        if self.ended:
            return -1
        lr = self.trainer.optimizers[0].param_groups[0]["lr"]
        self.log("train/lr", torch.full((), lr, device=self.device), batch_size=len(batch))
        return None

    def on_train_epoch_end(self) -> None:
        if self.ended:
            self.trainer.should_stop = True

    def training_step(self, batch: Batch, batch_idx: int) -> Tensor:
        loss = self.engine.training_loss(self.net, batch, self.label_smoothing, self.denominator)
        self.log("train/loss", loss, batch_size=len(batch))  # the bar reads it as it is redrawn
        return loss

    def validation_step(self, batch: Batch, batch_idx: int) -> None:
        if self.skip_rest:  # the ranks are stopping on a signal: the rest of the share is left
            return
        nll, tokens = self.engine.nll(self.net, batch)
        self.val_nll.update(nll)
        self.val_tokens.update(torch.tensor(float(tokens)))

    def on_validation_epoch_end(self) -> None:
        nll, tokens = float(self.val_nll.compute()), float(self.val_tokens.compute())
        self.val_nll.reset()
        self.val_tokens.reset()
        self.log("val/ppl", ppl_from_nll(nll, tokens), prog_bar=True, sync_dist=False)
        self.log("val/nll_per_token", nll / max(tokens, 1.0))

    def configure_callbacks(self) -> list[L.Callback]:
        """The schedules' own callback: the dev-metric schedules stepped after each validation,
        the rate's changes said (:mod:`luong_lit.training.lr_steps`)."""
        from luong_lit.training.lr_steps import ScheduleSteps

        have = any(isinstance(c, ScheduleSteps) for c in self.trainer.callbacks)
        return [] if have else [ScheduleSteps()]  # once: trainer.test asks again

    def lr_scheduler_step(self, scheduler, metric) -> None:
        """Lightning's stepping, but for the schedules stepped after each validation
        (:class:`~luong_lit.training.lr_steps.ScheduleSteps` steps them)."""
        if not getattr(scheduler, "after_validation", False):
            super().lr_scheduler_step(scheduler, metric)

    def on_test_epoch_start(self) -> None:
        # per test set: summed NLL, tokens, sentences
        self._test_sums: dict[int, tuple[Tensor, int, int]] = {}
        self.test_figures: dict[str, dict[str, float]] = {}  # exact, for results.json

    def test_step(self, batch: Batch, batch_idx: int, dataloader_idx: int = 0) -> None:
        if self.skip_rest:  # as in validation_step
            return
        nll, tokens = self.engine.nll(self.net, batch)
        total, count, sentences = self._test_sums.get(dataloader_idx, (0.0, 0, 0))
        self._test_sums[dataloader_idx] = (total + nll.detach(), count + tokens,
                                           sentences + len(batch))  # no sync  # fmt: skip

    def on_test_epoch_end(self) -> None:
        """Each test set's ``ppl`` and ``sentences_ppl`` (:func:`.figures.test_perplexities`)."""
        test_perplexities(self, self._test_sums)

    def configure_optimizers(self) -> Any:
        trained = [p for p in self.parameters() if p.requires_grad]  # not those frozen
        opt = self.optimizer_factory(params=trained, **plain_if_scaled(self.trainer,
                                     self.optimizer_factory))  # fmt: skip
        if self.scheduler_factory is None:
            return opt
        return {"optimizer": opt, "lr_scheduler": self.scheduler_factory(opt, Plan(self.trainer))}

    def configure_gradient_clipping(
        self, optimizer, gradient_clip_val=None, gradient_clip_algorithm=None
    ) -> None:
        """Paper §4.1: rescale the gradient whenever its norm exceeds ``trainer.gradient_clip_val``
        (Lightning's own clipping; with ``clip_exclude_embeddings``, the norm leaves them out)."""
        if self.clip_exclude_embeddings and gradient_clip_val:
            return clip_without_embeddings(self, gradient_clip_val)
        if not clip_unscaled(self.trainer, optimizer, gradient_clip_val, gradient_clip_algorithm):
            self.clip_gradients(optimizer, gradient_clip_val, gradient_clip_algorithm)

    def on_save_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        """The model's description, and the random state of every rank (:func:`save_rng`)."""
        checkpoint[META_KEY] = self.extra_state  # a CheckpointMeta as plain data
        save_rng(checkpoint, self.trainer.world_size)

    def on_load_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        """Dropout masks continue exactly as in an unbroken run (:func:`load_rng`)."""
        load_rng(checkpoint, self.trainer.world_size, self.trainer.global_rank)
