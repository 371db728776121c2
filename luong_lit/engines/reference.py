"""The ``reference`` engine: the plain modules of :mod:`luong_lit.nn`, as the paper reads.

An engine is how the same parameters are computed. It offers what the rest of the kit needs,
for training and decoding alike:

* :meth:`nll`: a batch's summed token NLL (paper Eq. 6) and its token count, in the batch's
  own shape (validation, test perplexity);
* :meth:`training_loss`: the training loss of a batch, which the trainer differentiates;
* :meth:`for_decoding`: the model in its decode-time form, offering ``encode``/``step``/
  ``logits`` (:mod:`luong_lit.decoding` needs nothing else);
* :meth:`setup`: called once the trainer knows its device and precision; :meth:`padding`,
  how the loader pads the training batches for it; :meth:`prepare`, before the first step.

Every engine gives the reference engine's losses, gradients and translations (parity tests in
``tests/test_engines.py``), except where an option says it is approximate (``int8``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from torch import Tensor

from luong_lit.data.loading.batching import Batch
from luong_lit.data.loading.buckets import BucketPadding
from luong_lit.errors import ConfigError
from luong_lit.nn.interface import AnyDecodeModel
from luong_lit.nn.loss import token_nll

if TYPE_CHECKING:
    from luong_lit.nn.seq2seq import Seq2Seq

#: ``denominator(batch, n_tokens)``: what a batch's summed NLL is divided by (the loss norm).
Denominator = Callable[[Batch, Any], Tensor | float]


class ReferenceEngine:
    """``nn.LSTM`` over packed batches, a step loop for input feeding, ``F.cross_entropy``."""

    name = "reference"
    int8: str | None = None

    def setup(
        self,
        device: str = "cpu",
        precision: str = "32-true",
        accumulate: int = 1,
        world_size: int = 1,
    ) -> None:
        """Nothing to choose: the reference runs the same way everywhere."""

    def padding(self) -> BucketPadding | None:
        """How the loader pads the training batches for this engine: not at all (a fixed-shape
        engine pads each to its bucket)."""
        return None

    def prepare(
        self, net: Seq2Seq, label_smoothing: float, shapes: Sequence[tuple[int, int, int]]
    ) -> None:
        """Before the first training step, with the shapes ``(B, S, T)`` its batches can take
        (:func:`~luong_lit.data.loading.buckets.bucket_shapes`): nothing to prepare here."""

    def nll(self, net: Seq2Seq, batch: Batch, label_smoothing: float = 0.0) -> tuple[Tensor, Any]:
        """Summed token NLL of ``batch`` under teacher forcing, and its token count."""
        return token_nll(net, batch, label_smoothing)

    def training_loss(
        self, net: Seq2Seq, batch: Batch, label_smoothing: float, denominator: Denominator
    ) -> Tensor:
        """``nll / denominator(batch, n_tokens)``, to be differentiated by the trainer."""
        nll, n_tokens = self.nll(net, batch, label_smoothing)
        return nll / denominator(batch, n_tokens)

    def for_decoding(self, model: AnyDecodeModel, int8: str | None = None) -> AnyDecodeModel:
        """The model itself: its own ``encode``/``step``/``logits`` (an ensemble likewise)."""
        if int8:
            raise ConfigError(
                f"int8={int8}: 8-bit decoding is a form of the fast engine; use engine=fast "
                "(--engine fast)"
            )
        return model

    def describe(self) -> dict[str, Any]:
        """What a run records about how it computed (``job.json``, logs)."""
        return {"engine": self.name}
