"""The notebook's attention heatmaps: the forced-decoding attention of several runs on the same
dev sentence, side by side (:func:`heatmaps_side_by_side`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from luong_lit.analysis.decoded import load_run_model
from luong_lit.analysis.runs import run_label


def heatmaps_side_by_side(
    runs: Sequence[Path] | Mapping[str, Path], sentence: int = 0, max_len: int = 30
):
    """One figure with the forced-decoding attention of each run on the same dev sentence;
    ``runs`` by label (what differs between them: :func:`~luong_lit.analysis.tables.cells`'s
    labels), or a list (each titled by its system)."""
    from luong_lit.analysis.figures import attention_figure, heatmap_panels

    labelled = (
        list(runs.items()) if isinstance(runs, Mapping) else [(run_label(r), r) for r in runs]
    )
    panels, words = [], None
    for label, run in labelled:
        model, dm = load_run_model(run)
        if not model.inference.has_attention:
            continue
        dev = dm.splits["dev"]
        src_ids, tgt_ids = dev.src_ids[sentence][:max_len], dev.tgt_ids[sentence][:max_len]
        panels += heatmap_panels({label: model.inference.stepper}, src_ids, tgt_ids)
        words = (dev.src_tokens[sentence][:max_len], dev.tgt_tokens[sentence][:max_len])
    if not panels or words is None:  # words: set with the first panels
        raise ValueError("none of the runs has an attention model")
    return attention_figure(panels, *words)
