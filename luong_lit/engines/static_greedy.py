"""Greedy decoding in fixed shapes, with no value read on the host (a step that CUDA graphs
can capture). Every row runs the same number of steps; :func:`greedy_decode_static` gives the
words of :func:`luong_lit.decoding.greedy.greedy_decode` (``tests/test_static.py``).

No command decodes with it yet: it is the piece a graph-captured greedy search on a GPU
(validation BLEU in one replay per batch shape) is built from, kept exact against the eager
search on the CPU until then."""

from __future__ import annotations

import torch
from torch import Tensor

from luong_lit.data.vocab import BOS_ID, EOS_ID
from luong_lit.decoding.beam import length_bounds
from luong_lit.nn.fast.static import static_memory


@torch.no_grad()
def greedy_decode_static(
    model, src: Tensor, src_len: Tensor, steps: int, max_len_ratio=1.5, max_len_extra=5
) -> Tensor:
    """:func:`greedy_decode` in fixed shapes, with no value read on the host (CUDA graphs).

    Every row runs exactly ``steps`` steps from a padded batch; a row's words end at its
    first ``</s>`` (or its length limit), and every later id is ``</s>``. Returns (B, steps).
    """
    memory, state = static_memory(model, src, src_len)  # the padded batch, no host read
    limits, _ = length_bounds(src_len, max_len_ratio, max_len_extra, 0.0, 0)  # (B,)
    B = src.size(0)
    y = torch.full((B,), BOS_ID, dtype=torch.long, device=src.device)  # (B,)
    done = torch.zeros(B, dtype=torch.bool, device=src.device)  # (B,)
    out = []
    for t in range(steps):
        logits, state, _ = model.step(y, state, memory, t)  # (B, V)
        y = torch.where(done | (t >= limits), EOS_ID, logits.argmax(-1))  # (B,)
        out.append(y)
        done = done | (y == EOS_ID)
    return torch.stack(out, 1)  # (B, steps)
