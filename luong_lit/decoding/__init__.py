"""Decoding: pure functions over the model's encode/step interface (no Lightning)."""

from luong_lit.decoding.greedy import greedy_decode

__all__ = ["greedy_decode"]
