"""The notebook's attention heatmaps: the forced-decoding attention of several runs on the same
dev sentence, side by side (:func:`heatmaps_side_by_side`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from luong_lit.analysis.decoded import load_run_model
from luong_lit.analysis.runs import run_label


def heatmaps_side_by_side(runs: Sequence[Path], sentence: int = 0, max_len: int = 30):
    """One figure with the forced-decoding attention of each run on the same dev sentence."""
    from luong_lit.analysis.figures import attention_figure, heatmap_panels

    panels, words = [], None
    for run in runs:
        model, dm = load_run_model(run)
        if not model.inference.has_attention:
            continue
        dev = dm.splits["dev"]
        src_ids, tgt_ids = dev.src_ids[sentence][:max_len], dev.tgt_ids[sentence][:max_len]
        panels += heatmap_panels({run_label(run): model.inference.stepper}, src_ids, tgt_ids)
        words = (dev.src_tokens[sentence][:max_len], dev.tgt_tokens[sentence][:max_len])
    if not panels:
        raise ValueError("none of the runs has an attention model")
    return attention_figure(panels, *words)
