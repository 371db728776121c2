"""Attention heatmaps of chosen dev sentences, drawn at every validation (paper Figure 7 style).

Each picture is the forced-decoded reference: row ``i`` is the attention that aligns target
word ``i`` under footnote 14's convention, so rows read as alignments. The attention is
computed on the training thread. With ``draw=background`` the pictures are drawn and saved in
a thread of their own while training goes on, and logged (W&B, TensorBoard) from the training
thread once saved: at the next validation, and at the end of the fit or of the test, which
wait for them. ``inline`` draws them on the training thread; ``auto`` (the default) draws in
the background where the model is on a GPU, and inline on a CPU, where the drawing shares the
cores and the interpreter with training and showed no gain
(``scripts/benchmarks/epoch_extras.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import lightning as L

from luong_lit.analysis.figures import heatmap_panels, save_attention
from luong_lit.nn.modes import evaluating
from luong_lit.training.loggers import log_image
from luong_lit.validate import one_of

DRAW = ("auto", "background", "inline")


class AttentionHeatmapCallback(L.Callback):
    """Saves ``attention/epoch{E}_dev{i}.png`` for dev sentences ``sentences`` and logs them;
    ``draw``: ``auto``, ``background`` or ``inline`` (the module's doc)."""

    def __init__(
        self, sentences: Sequence[int] = (0, 1, 2), every_n_epochs: int = 1, max_len: int = 40,
        draw: str = "auto",
    ) -> None:  # fmt: skip
        one_of("draw", draw, DRAW)
        self.sentences, self.every, self.max_len = list(sentences), every_n_epochs, max_len
        self.draw = draw
        self._pool: ThreadPoolExecutor | None = None
        self._drawing: list[tuple[str, int, Future]] = []  # (logged key, step, saved path)

    def on_validation_epoch_end(self, trainer, pl_module) -> None:
        self._log_saved(trainer)
        net = pl_module.net
        if (
            not self.every
            or trainer.sanity_checking
            or (trainer.current_epoch + 1) % self.every
            or net.attention is None
            or not trainer.is_global_zero
        ):
            return
        dev = trainer.datamodule.splits["dev"]
        out_dir = Path(trainer.default_root_dir) / "attention"  # the run directory
        epoch = trainer.current_epoch + 1
        with evaluating(net):
            for i in (s for s in self.sentences if s < len(dev.src_ids)):
                src, tgt = dev.src_tokens[i][: self.max_len], dev.tgt_tokens[i][: self.max_len]
                panels = heatmap_panels(
                    {f"dev {i}, epoch {epoch}": net},
                    dev.src_ids[i][: self.max_len],
                    dev.tgt_ids[i][: self.max_len],
                )
                path, key = out_dir / f"epoch{epoch:03d}_dev{i}.png", f"attention/dev{i}"
                if not self._in_background(pl_module):
                    log_image(
                        trainer, key, save_attention(panels, src, tgt, path), trainer.global_step
                    )
                    continue
                drawn = self._drawer().submit(save_attention, panels, src, tgt, path)
                self._drawing.append((key, trainer.global_step, drawn))

    def _in_background(self, pl_module) -> bool:
        if self.draw != "auto":
            return self.draw == "background"
        return pl_module.device.type == "cuda"

    def __getstate__(self) -> dict:  # sent to spawned ranks: no thread, nothing drawing
        return {**self.__dict__, "_pool": None, "_drawing": []}

    def _drawer(self) -> ThreadPoolExecutor:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(1, thread_name_prefix="luong_lit-heatmaps")
        return self._pool

    def _log_saved(self, trainer, wait: bool = False) -> None:
        """Log the pictures saved so far (``wait``: all of them, once drawn), in order."""
        while self._drawing and (wait or self._drawing[0][2].done()):
            key, step, drawn = self._drawing.pop(0)
            log_image(trainer, key, drawn.result(), step)

    def on_fit_end(self, trainer, pl_module) -> None:
        self._log_saved(trainer, wait=True)

    def on_test_end(self, trainer, pl_module) -> None:
        self._log_saved(trainer, wait=True)

    def teardown(self, trainer, pl_module, stage: str) -> None:
        if self._pool is not None and not self._drawing:
            self._pool.shutdown()
            self._pool = None

    def on_exception(self, trainer, pl_module, exception) -> None:
        try:  # a stopped run keeps the pictures it drew; the stop's own error is the one said
            self._log_saved(trainer, wait=True)
        except Exception:  # noqa: BLE001 - a picture that could not be saved
            self._drawing.clear()
