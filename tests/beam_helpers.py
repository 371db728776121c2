"""A bigram model for the beam-search tests: log p(y_t | y_{t-1}) from a table, no source."""

from __future__ import annotations

import math

import torch

from luong_lit.data.vocab import BOS_ID, EOS_ID
from luong_lit.nn import Memory
from luong_lit.nn.decoder import DecoderState

A, B_ = 4, 5  # two ordinary words; ids 0-3 are <pad> <unk> <s> </s>


class BigramStub:
    """log p(y_t | y_{t-1}) from a fixed table, whatever the source."""

    def __init__(self, table: dict[int, dict[int, float]], V: int = 6) -> None:
        self.logits = torch.full((V, V), -1e9)
        for prev, row in table.items():
            for tok, p in row.items():
                self.logits[prev, tok] = math.log(p)

    def encode(self, src, src_len):
        Bn, S = src.shape
        ones = torch.ones(Bn, S, dtype=torch.bool)  # no padding: the stub attends nowhere
        mem = Memory(
            torch.zeros(Bn, S, 1), torch.zeros(Bn, S, 1), src_len, ones, torch.zeros(Bn, S)
        )
        return mem, DecoderState(torch.zeros(1, Bn, 1), torch.zeros(1, Bn, 1), torch.zeros(Bn, 1))

    has_attention = False  # its steps give no alignment

    def step(self, y, state, memory, t):
        return self.logits[y], state, None


# greedy takes A (0.6) then is stuck with 0.5 max; beam finds B (0.4) then </s> (1.0)
TRAP = {BOS_ID: {A: 0.6, B_: 0.4}, A: {A: 0.5, EOS_ID: 0.5}, B_: {EOS_ID: 1.0}}
