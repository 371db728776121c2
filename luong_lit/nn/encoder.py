"""Stacked LSTM encoder (paper §2 and §4.1), in its plain form: ``nn.LSTM`` over a packed batch."""

from __future__ import annotations

import torch
from torch import Tensor, nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from luong_lit.nn.options import Architecture, Regularisation, Sizes


def reverse_index(lengths: Tensor, S: int) -> Tensor:
    """Per-row index that reverses the first ``lengths[b]`` positions and keeps padding.

    The permutation is its own inverse. Returns (B, S).
    """
    pos = torch.arange(S, device=lengths.device).unsqueeze(0)  # (1, S)
    rev = lengths.unsqueeze(1) - 1 - pos  # (B, S)
    return torch.where(pos < lengths.unsqueeze(1), rev, pos)


def stacked_lstm(
    input_size: int, *, sizes: Sizes, architecture: Architecture, regularisation: Regularisation
) -> nn.LSTM:
    """The ``L``-layer LSTM of either side, reading ``input_size`` features: dropout on the
    input of every layer after the first (``nn.LSTM``'s own), biases as ``architecture`` says."""
    return nn.LSTM(
        input_size,
        sizes.hidden_size,
        sizes.num_layers,
        bias=architecture.bias,
        batch_first=True,
        dropout=regularisation.dropout if sizes.num_layers > 1 else 0.0,
    )


class Encoder(nn.Module):
    """Embeds and reads the source with an ``L``-layer LSTM.

    Dropout is applied to the input of every LSTM layer (docs/paper_notes.md §7): the
    embedding for layer 1, and the lower layer's output for layers ≥ 2 (``nn.LSTM``'s own
    ``dropout``).

    With ``reverse_source`` the LSTM reads each sentence backwards (paper §4.1, "+reverse"), but
    the returned states ``h_bar_s`` are put back in *original* order, so every position-based
    computation downstream (local windows, location slots, alignments) works in original
    positions (docs/paper_notes.md §6). With ``src_eos`` (``eos_last``) every sentence ends in
    ``</s>``, which stays last when reversing: the LSTM reads ``x_S .. x_1 </s>``.
    """

    def __init__(
        self,
        *,
        vocab_size: int,
        pad_id: int,
        sizes: Sizes,
        architecture: Architecture,
        regularisation: Regularisation,
    ) -> None:
        """The source side of the options: ``reverse_source``, ``src_eos`` (``eos_last``) and
        ``bias`` of ``architecture``, ``dropout`` of ``regularisation``."""
        super().__init__()
        self.reverse_source, self.eos_last = architecture.reverse_source, architecture.src_eos
        self.embedding = nn.Embedding(vocab_size, sizes.embed_size, padding_idx=pad_id)
        self.dropout = nn.Dropout(regularisation.dropout)
        self.rnn = stacked_lstm(
            sizes.embed_size, sizes=sizes, architecture=architecture, regularisation=regularisation
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
        x = self.dropout(self.embedding(src))  # (B, S, e)
        packed = pack_padded_sequence(x, src_len.cpu(), batch_first=True, enforce_sorted=False)
        out, (h, c) = self.rnn(packed)  # each sentence stops at its own end
        h_bar_s, _ = pad_packed_sequence(out, batch_first=True, total_length=S)  # (B, S, d)
        return self.original_order(h_bar_s, src_len), (h, c)

    def original_order(self, h_bar_s: Tensor, src_len: Tensor) -> Tensor:
        """Undo the reading order: the state of source word ``s`` at position ``s``."""
        if not self.reverse_source:
            return h_bar_s
        rev = reverse_index(src_len - int(self.eos_last), h_bar_s.size(1))  # (B, S)
        return h_bar_s.gather(1, rev.unsqueeze(-1).expand_as(h_bar_s))  # (B, S, d)
