"""Stacked LSTM encoder (paper §2 and §4.1)."""
from __future__ import annotations

import torch
from torch import Tensor, nn

from luong_lit.nn.dropout import Dropout
from luong_lit.nn.lstm import pack_ids, ragged_lstm, unpack


def reverse_index(lengths: Tensor, S: int) -> Tensor:
    """Per-row index that reverses the first ``lengths[b]`` positions and keeps padding.

    The permutation is its own inverse. Returns (B, S).
    """
    pos = torch.arange(S, device=lengths.device).unsqueeze(0)  # (1, S)
    rev = lengths.unsqueeze(1) - 1 - pos  # (B, S)
    return torch.where(pos < lengths.unsqueeze(1), rev, pos)


class Encoder(nn.Module):
    """Embeds and reads the source with an ``L``-layer LSTM.

    Dropout is applied to the input of every LSTM layer (spec §7): the embedding for layer 1,
    and the lower layer's output for layers ≥ 2 (``nn.LSTM``'s own ``dropout``).

    With ``reverse_source=True`` the LSTM reads each sentence backwards (paper §4.1, "+reverse"),
    but the returned states ``h_bar_s`` are put back in *original* order, so every
    position-based computation downstream (local windows, location slots, alignments)
    works in original positions (spec §6). With ``eos_last=True`` every sentence ends in
    ``</s>``, which stays last when reversing: the LSTM reads ``x_S .. x_1 </s>``.
    """

    def __init__(
        self,
        vocab_size: int,
        embed_size: int,
        hidden_size: int,
        num_layers: int,
        dropout: float = 0.0,
        reverse_source: bool = False,
        bias: bool = True,
        pad_id: int = 0,
        eos_last: bool = False,
    ) -> None:
        super().__init__()
        self.reverse_source, self.eos_last = reverse_source, eos_last
        self.embedding = nn.Embedding(vocab_size, embed_size, padding_idx=pad_id)
        self.dropout = Dropout(dropout)
        self.rnn = nn.LSTM(
            embed_size, hidden_size, num_layers, bias=bias, batch_first=True,
            dropout=dropout if num_layers > 1 else 0.0,
        )

    def forward(self, src: Tensor, src_len: Tensor) -> tuple[Tensor, tuple[Tensor, Tensor]]:
        """Encode a padded batch.

        Args:
            src: (B, S) token ids, right-padded.
            src_len: (B,) true lengths, all ≥ 1.

        Returns:
            h_bar_s: (B, S, d) top-layer states in original order, zeros at padding.
            (h, c): each (L, B, d), the final states of every layer.
        """
        S = src.size(1)
        if self.reverse_source:
            rev = reverse_index(src_len - int(self.eos_last), S)  # (B, S), its own inverse
            src = src.gather(1, rev)  # (B, S) reversed words, then </s> if eos_last, pads last
        ids, flat_index = pack_ids(src, src_len)  # real tokens only, time-major
        packed = ids._replace(data=self.dropout(self.embedding(ids.data)))  # (N, e)
        if src.is_cuda:
            out, (h, c) = self.rnn(packed)  # cuDNN
        else:
            out, (h, c) = ragged_lstm(packed, self.rnn)  # the same result, faster on CPU
        h_bar_s = unpack(out.data, flat_index, src.size(0), S)  # (B, S, d)
        if self.reverse_source:
            idx = rev.unsqueeze(-1).expand_as(h_bar_s)  # (B, S, d)
            h_bar_s = h_bar_s.gather(1, idx)  # back to original order
        return h_bar_s, (h, c)
