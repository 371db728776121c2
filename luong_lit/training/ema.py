"""An exponential moving average of the weights (``callbacks.ema.decay``), through Lightning's
``EMAWeightAveraging`` (Polyak averaging as ``torch.optim.swa_utils`` computes it): after every
optimizer step, ``ema = decay * ema + (1 - decay) * weights``.

One set of weights is what a run reports and keeps: the average. Every validation (its
perplexity, its BLEU, ``select_by``, early stopping, the plateau schedules, the choice of
``best.ckpt``), the final test in ``results.json`` and every checkpoint's weights
(``state_dict``, what ``translate`` and ``evaluate`` load) are the average's; the raw weights
are kept beside them (``current_model_state``), and a resumed run continues both. Off unless a
decay is given (:func:`ema`)."""

from __future__ import annotations

from typing import Any

from lightning.pytorch.callbacks import EMAWeightAveraging
from lightning.pytorch.trainer.states import TrainerFn

from luong_lit.training.lightning_internals import averaged_model, swap_averaged
from luong_lit.validate import fraction, integer


def ema(decay: float | None = None, every_n_steps: int = 1,
        start_step: int | None = None) -> EMAWeightAveraging | None:  # fmt: skip
    """Lightning's ``EMAWeightAveraging`` with ``decay``, updated every ``every_n_steps``
    optimizer steps from step ``start_step`` on (None: from the first); None (no callback)
    without a decay."""
    if decay is None:
        return None
    fraction("decay", decay)
    integer("every_n_steps", every_n_steps, 1)
    integer("start_step", start_step, 0, nullable=True)
    return AveragedWeights(decay=decay, update_every_n_steps=every_n_steps,
                           update_starting_at_step=start_step)  # fmt: skip


class AveragedWeights(EMAWeightAveraging):
    """Lightning's ``EMAWeightAveraging``, with the average in place for the whole of every
    validation and test (see the module doc). Lightning swaps it in for a validation's steps
    only (its BLEU, decoded in the epoch's end hooks, read the raw weights), restores the raw
    weights over a test's checkpoint (the test read them), and copies the average over the raw
    weights when training ends (a resumed run would then continue from the average)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._swapped = False  # the module holds the average, the averaged model the raw weights

    def _swap(self, pl_module, to_average: bool) -> None:
        if averaged_model(self) is not None and self._swapped != to_average:
            swap_averaged(self, pl_module)
            self._swapped = to_average

    def on_validation_epoch_start(self, trainer, pl_module) -> None:
        self._swap(pl_module, True)

    def on_validation_epoch_end(self, trainer, pl_module) -> None:
        return  # the average stays until every callback has read this validation

    def on_validation_end(self, trainer, pl_module) -> None:
        self._swap(pl_module, False)  # before the checkpoint callbacks (Lightning's last) save

    def on_test_start(self, trainer, pl_module) -> None:
        if not trainer.ckpt_path:  # no checkpoint named: the final weights, averaged
            self._swap(pl_module, True)

    def on_test_end(self, trainer, pl_module) -> None:
        self._swap(pl_module, False)

    def on_exception(self, trainer, pl_module, exception: BaseException) -> None:
        self._swap(pl_module, False)  # a checkpoint written now keeps the raw weights as such

    def on_train_end(self, trainer, pl_module) -> None:
        return  # the raw weights stay: last.ckpt, written after, resumes exactly

    def on_save_checkpoint(self, trainer, pl_module, checkpoint: dict[str, Any]) -> None:
        if not self._swapped:
            return super().on_save_checkpoint(trainer, pl_module, checkpoint)
        average = averaged_model(self)
        raw = average.module.state_dict()  # swapped: the raw weights are here
        checkpoint["current_model_state"] = {k: v.detach().clone() for k, v in raw.items()}
        checkpoint["averaging_state"] = {
            k: v for k, v in average.state_dict().items() if not k.startswith("module.")
        }  # checkpoint["state_dict"] is the module's: the average already

    def on_load_checkpoint(self, trainer, pl_module, checkpoint: dict[str, Any]) -> None:
        if trainer.state.fn == TrainerFn.FITTING:  # a resume: both sets of weights continue
            super().on_load_checkpoint(trainer, pl_module, checkpoint)
        # a test or validation of a checkpoint reads its weights, the average, as they are
