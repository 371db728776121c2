"""Attention heatmaps of chosen dev sentences, drawn at every validation (paper Figure 7 style).

Each picture is the forced-decoded reference: row ``i`` is the attention that aligns target
word ``i`` under footnote 14's convention, so rows read as alignments.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import lightning as L

from luong_lit.analysis.figures import heatmap_panels, save_attention
from luong_lit.nn.modes import evaluating
from luong_lit.training.loggers import log_image


class AttentionHeatmapCallback(L.Callback):
    """Saves ``attention/epoch{E}_dev{i}.png`` for dev sentences ``sentences`` and logs them."""

    def __init__(
        self, sentences: Sequence[int] = (0, 1, 2), every_n_epochs: int = 1, max_len: int = 40
    ) -> None:
        self.sentences, self.every, self.max_len = list(sentences), every_n_epochs, max_len

    def on_validation_epoch_end(self, trainer, pl_module) -> None:
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
                path = save_attention(panels, src, tgt, out_dir / f"epoch{epoch:03d}_dev{i}.png")
                log_image(trainer, f"attention/dev{i}", path, trainer.global_step)
