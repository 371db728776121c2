"""An exponential moving average of the weights (``callbacks.ema.decay``), through Lightning's
``EMAWeightAveraging`` (Polyak averaging as ``torch.optim.swa_utils`` computes it): after every
optimizer step, ``ema = decay * ema + (1 - decay) * weights``. Validation and the final test run
on the averaged weights; every checkpoint keeps them as its weights (``state_dict``, what
``translate`` and ``evaluate`` load) and the raw ones beside them (``current_model_state``), and a
resumed run continues both. Off unless a decay is given (:func:`ema`)."""

from __future__ import annotations

from lightning.pytorch.callbacks import EMAWeightAveraging

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
    return KeptRawWeights(decay=decay, update_every_n_steps=every_n_steps,
                          update_starting_at_step=start_step)  # fmt: skip


class KeptRawWeights(EMAWeightAveraging):
    """Lightning's ``EMAWeightAveraging``, but the model keeps its raw weights when training
    ends (Lightning copies the average into it): ``last.ckpt``, written after, then holds both
    as every checkpoint does (the average as its weights, the raw ones beside), and a resumed
    run continues from the raw weights exactly. The test and ``translate`` read the average,
    the checkpoint's weights."""

    def on_train_end(self, trainer, pl_module) -> None:
        return
