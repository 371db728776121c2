"""Pure helpers for local attention windows (paper §3.2; docs/paper_notes.md §1–2).

All positions are 0-based and in *original* source order, whatever the encoder's reading
order. These two functions are where reimplementations of local attention disagree, so they
are kept small, pure and separately tested.
"""

from __future__ import annotations

import torch
from torch import Tensor


def window(
    center: Tensor, D: int, src_len: Tensor, *, bound: Tensor | None = None, S: int | None = None
) -> tuple[Tensor, Tensor]:
    """The ``2D+1`` source positions ``[center-D, center+D]`` around each window centre.

    Slots outside ``[0, bound)`` are invalid (footnote 8: "we simply ignore the outside
    part"). The window is truncated, never shifted (docs/paper_notes.md §1).

    Args:
        center: (B, T) integer window centres.
        D: half-width of the window.
        src_len: (B,) true source lengths ``S``.
        bound: (B,) the exclusive upper bound for valid slots; defaults to ``src_len``.
            Pass the padded batch length to mimic the paper-era code (docs/paper_notes.md §1).
        S: the padded source length, if known: positions are clamped into ``[0, S-1]``
            without reading the longest length on the host (a synchronisation on a GPU).
            Slots beyond the longest sentence are invalid either way, so the result is the same.

    Returns:
        idx: (B, T, 2D+1) positions clamped into ``[0, S_max-1]``, safe for gathering.
        valid: (B, T, 2D+1) True where the slot lies inside the sentence.
    """
    bound = src_len if bound is None else bound
    offsets = torch.arange(-D, D + 1, device=center.device)  # (W,)
    pos = center.unsqueeze(-1) + offsets  # (B, T, W)
    valid = (pos >= 0) & (pos < bound.view(-1, 1, 1))  # (B, T, W)
    s_max = max(int(bound.max()), 1) if S is None else S
    return pos.clamp(0, s_max - 1), valid


def gaussian(pos: Tensor, p_t: Tensor, sigma: float | Tensor) -> Tensor:
    """``exp(-(s - p_t)² / (2σ²))`` of paper Eq. 11 for window positions ``pos``.

    Args:
        pos: (B, T, W) integer source positions ``s``.
        p_t: (B, T) real-valued aligned positions (not the floored centre, docs/paper_notes.md §1).
        sigma: the standard deviation, ``D/2`` in the paper: a number, a one-element tensor,
            or one per query (B, T).

    Returns:
        (B, T, W) weights in (0, 1].
    """
    diff = pos.to(p_t.dtype) - p_t.unsqueeze(-1)  # (B, T, W)
    if isinstance(sigma, Tensor) and sigma.dim() > 0:
        sigma = sigma.unsqueeze(-1)  # (B, T, 1): one σ per query
    return torch.exp(-(diff * diff) / (2.0 * sigma * sigma))


def gather_positions(x: Tensor, idx: Tensor) -> Tensor:
    """Gather ``x[b, idx[b, t, w]]`` for every batch row.

    Args:
        x: (B, S, k) per-position vectors.
        idx: (B, T, W) positions into the S axis.

    Returns:
        (B, T, W, k)
    """
    B, S, k = x.shape
    flat = idx + (torch.arange(B, device=idx.device) * S).view(B, 1, 1)  # (B, T, W)
    return x.reshape(B * S, k)[flat]  # (B, T, W, k)
