"""A tiny copy task learns, and its attention argmax is the diagonal."""

from __future__ import annotations

import pytest
import torch
from conftest import small_model

from luong_lit.data.loading.batching import collate
from luong_lit.decoding import greedy_decode
from luong_lit.nn.loss import token_nll


def sample(n: int, g: torch.Generator):
    """Random sentences of 5–8 words over 10 symbols (ids 4..13); the target is a copy."""
    out = []
    for i in range(n):
        L = int(torch.randint(5, 9, (1,), generator=g))
        s = torch.randint(4, 14, (L,), generator=g).tolist()
        out.append((i, s, s))
    return out


@pytest.mark.parametrize(
    "attention,score", [("global", "general"), ("local_m", "dot"), ("local_p", "general")]
)
def test_copy_task_learns_with_diagonal_attention(attention, score):
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(0)
    model = small_model(
        src_vocab_size=14,
        tgt_vocab_size=14,
        embed_size=32,
        hidden_size=64,
        num_layers=1,
        attention=attention,
        score=score,
    )
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(300):
        batch = collate(sample(32, g))
        nll, tokens = token_nll(model, batch)
        opt.zero_grad()
        (nll / tokens).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        opt.step()
    model.eval()
    test = collate(sample(64, g))
    hyps, attn = greedy_decode(model, test.src, test.src_len, return_attention=True)
    correct = total = diag = 0
    for b, hyp in enumerate(hyps):
        ref = test.src[b, : int(test.src_len[b])].tolist()
        correct += sum(h == r for h, r in zip(hyp, ref))
        total += len(ref)
        # a_t at step t predicts y_t = x_t: argmax over source positions is t
        steps = min(len(ref), attn[b].size(0))
        diag += sum(int(attn[b][t].argmax()) == t for t in range(steps))
    assert correct / total >= 0.9
    assert diag / total >= 0.9
