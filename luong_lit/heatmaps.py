"""Attention heatmaps of chosen dev sentences, drawn at every validation (paper Figure 7 style).

Each picture is the forced-decoded reference: row ``i`` is the attention that aligns target
word ``i`` under footnote 14's convention, so rows read as alignments.
"""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

import lightning as L
import torch

from luong_lit.decoding.align import forced_attention
from luong_lit.decoding.unk import alignment_rows
from luong_lit.loggers import log_image
from luong_lit.viz import save_attention


def heatmap_panels(models: dict, src_ids, tgt_ids) -> list[tuple[str, torch.Tensor]]:
    """``(title, rows)`` per model for one sentence pair: side-by-side comparisons."""
    panels = []
    for name, net in models.items():
        att = forced_attention(net, [src_ids], [tgt_ids])[0]
        panels.append((name, alignment_rows(att, len(tgt_ids), net.content_based).numpy()))
    return panels


class AttentionHeatmapCallback(L.Callback):
    """Saves ``attention/epoch{E}_dev{i}.png`` for dev sentences ``sentences`` and logs them."""

    def __init__(self, sentences: Sequence[int] = (0, 1, 2), every_n_epochs: int = 1, max_len: int = 40) -> None:
        self.sentences, self.every, self.max_len = list(sentences), every_n_epochs, max_len

    def on_validation_epoch_end(self, trainer, pl_module) -> None:
        net = pl_module.net
        if (not self.every or trainer.sanity_checking or (trainer.current_epoch + 1) % self.every
                or net.attention is None or not trainer.is_global_zero):
            return
        dev = trainer.datamodule.splits["dev"]
        out_dir = Path(trainer.default_root_dir) / "attention"  # the run directory
        was_training = net.training
        net.eval()
        for i in (s for s in self.sentences if s < len(dev.src_ids)):
            src, tgt = dev.src_tokens[i][: self.max_len], dev.tgt_tokens[i][: self.max_len]
            panels = heatmap_panels({f"dev {i}, epoch {trainer.current_epoch + 1}": net},
                                    dev.src_ids[i][: self.max_len], dev.tgt_ids[i][: self.max_len])
            path = save_attention(panels, src, tgt, out_dir / f"epoch{trainer.current_epoch + 1:03d}_dev{i}.png")
            log_image(trainer, f"attention/dev{i}", path, trainer.global_step)
        net.train(was_training)
