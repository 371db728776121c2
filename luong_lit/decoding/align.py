"""Forced decoding of reference translations and one-to-one alignments (paper §5.4; spec §12).

The model (or an ensemble, whose attention weights are summed) reads the reference words
through its own ``step`` interface. Each target word gets the source position with the highest
attention weight, under footnote 14's convention (content-based scores use the next step's
vector, location the current one). Positions are in original source order, even for models
that read the source reversed.
"""
from __future__ import annotations

from typing import Sequence

import torch

from luong_lit.data.batching import collate
from luong_lit.decoding.unk import word_alignment


@torch.no_grad()
def forced_attention(model, src_ids: Sequence[list[int]], tgt_ids: Sequence[list[int]],
                     batch_size: int = 32) -> list[torch.Tensor]:
    """Per sentence, the (len(tgt) + 1, len(src)) attention of every step, ``</s>`` step included."""
    out: list[torch.Tensor | None] = [None] * len(src_ids)
    device = next(model.parameters()).device
    for start in range(0, len(src_ids), batch_size):
        idx = list(range(start, min(start + batch_size, len(src_ids))))
        batch = collate([(i, src_ids[i], tgt_ids[i]) for i in idx]).to(device)
        memory, state = model.encode(batch.src, batch.src_len)
        steps = []
        for t in range(batch.tgt_in.size(1)):
            _, state, align = model.step(batch.tgt_in[:, t], state, memory, t)  # reads y_{t-1}
            steps.append(align.dense(batch.src.size(1))[:, 0])  # (B, S)
        att = torch.stack(steps, 1)  # (B, T+1, S)
        for row, i in enumerate(batch.index.tolist()):
            out[i] = att[row, : len(tgt_ids[i]) + 1, : len(src_ids[i])].cpu()
    return out  # type: ignore[return-value]


def attention_links(attention: Sequence[torch.Tensor], tgt_lens: Sequence[int], content_based: bool,
                    convention: str = "paper") -> list[set[tuple[int, int]]]:
    """One ``(source, target)`` link per target word from per-step attention matrices."""
    links = []
    for att, n in zip(attention, tgt_lens):
        if n == 0 or att.size(1) == 0:
            links.append(set())
            continue
        links.append({(s, j) for j, s in enumerate(word_alignment(att, n, content_based, convention))})
    return links
