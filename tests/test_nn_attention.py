"""``luong_lit.nn``: the scores of Eq. 8–9, global and local attention (§3.1–3.2) and their
windows, each against the formula written out or a naive loop, and gradchecks."""

from __future__ import annotations

import itertools

import pytest
import torch

from luong_lit.nn import build_attention
from luong_lit.nn.window import gaussian, window

B, S, T, d = 3, 9, 4, 5

LENGTHS = torch.tensor([9, 5, 1])


def memory(att, dtype=torch.float32):
    h_bar = torch.randn(B, S, d, dtype=dtype)
    h_bar[torch.arange(S) >= LENGTHS.unsqueeze(1)] = 0.0  # padded states are zeros
    return h_bar, att.prepare(h_bar, LENGTHS)


def naive_window(center: int, D: int, n: int) -> list[int]:
    return [s for s in range(center - D, center + D + 1) if 0 <= s < n]


def test_dot_and_general_equal_hand_formula():
    h_t = torch.randn(B, 1, d)
    for name in ("dot", "general"):
        att = build_attention("global", name, d)
        h_bar, mem = memory(att)
        _, align = att(h_t, mem)
        for b in range(B):
            n = int(LENGTHS[b])
            W = att.score.W_a.weight if name == "general" else torch.eye(d)
            scores = torch.stack([h_t[b, 0] @ (W @ h_bar[b, s]) for s in range(n)])
            torch.testing.assert_close(align.a_t[b, 0, :n], torch.softmax(scores, 0))


@pytest.mark.parametrize("paper_form", [True, False])
def test_concat_equals_hand_formula(paper_form):
    att = build_attention("global", {"name": "concat", "paper_form": paper_form}, d, bias=False)
    h_bar, mem = memory(att)
    h_t = torch.randn(B, 1, d)
    _, align = att(h_t, mem)
    sc = att.score
    W2 = (
        sc.W_2.weight if paper_form else torch.eye(d)
    )  # the authors' identity block (docs/paper_notes.md §4)
    for b in range(B):
        n = int(LENGTHS[b])
        scores = torch.stack(
            [
                sc.v_a.weight[0] @ torch.tanh(sc.W_1.weight @ h_t[b, 0] + W2 @ h_bar[b, s])
                for s in range(n)
            ]
        )
        torch.testing.assert_close(align.a_t[b, 0, :n], torch.softmax(scores, 0))


@pytest.mark.parametrize(
    "att_name,score",
    [
        ("global", "dot"),
        ("global", "general"),
        ("global", "concat"),
        ("global", "location"),
        ("local_m", "general"),
        ("local_p", "dot"),
    ],
)
def test_padding_gets_exactly_zero_weight(att_name, score):
    att = build_attention(att_name, score, d)
    _, mem = memory(att)
    for t in range(12):  # includes t > S for local-m
        _, align = att(torch.randn(B, 1, d), mem, t)
        dense = align.dense(S)  # (B, 1, S)
        pad = torch.arange(S) >= LENGTHS.view(-1, 1, 1)
        assert (dense[pad] == 0).all()
        assert (dense[~pad] >= 0).all()


def test_window_matches_naive_loop_at_both_boundaries():
    D = 2
    lengths = torch.tensor([1, 3, 6, 10])
    centers = torch.tensor([[0, 0, 1, 2], [0, 1, 2, 3], [0, 3, 5, 6], [0, 1, 8, 10]])
    idx, valid = window(centers, D, lengths)
    for b, c in itertools.product(range(4), range(4)):
        got = idx[b, c][valid[b, c]].tolist()
        assert got == naive_window(int(centers[b, c]), D, int(lengths[b]))


def test_local_m_matches_naive_per_sentence_loop_including_t_beyond_S():
    D = 2
    att = build_attention("local_m", "general", d)
    att.D = D
    h_bar, mem = memory(att)
    for t in range(12):
        h_t = torch.randn(B, 1, d)
        c_t, align = att(h_t, mem, t)
        for b in range(B):
            n = int(LENGTHS[b])
            p = min(t, n - 1)  # p_t = t, clamped to the last word (docs/paper_notes.md §2)
            pos = naive_window(p, D, n)
            scores = torch.stack([h_t[b, 0] @ att.score.W_a(h_bar[b, s]) for s in pos])
            a = torch.softmax(scores, 0)
            torch.testing.assert_close(align.dense(S)[b, 0, pos], a)
            torch.testing.assert_close(c_t[b, 0], (a.unsqueeze(1) * h_bar[b, pos]).sum(0))


def test_local_p_matches_naive_loop_and_properties():
    att = build_attention("local_p", "dot", d)
    att.D = 3
    h_bar, mem = memory(att)
    h_t = torch.randn(B, T, d) * 3
    c_t, align = att(h_t, mem, 0)
    p_t = align.p_t
    assert (p_t >= 0).all() and (p_t <= LENGTHS.unsqueeze(1).float()).all()  # p_t in [0, S]
    dense = align.dense(S)
    assert (dense.sum(-1) <= 1 + 1e-6).all()  # no renormalisation: sum <= 1
    for b, t in itertools.product(range(B), range(T)):
        n = int(LENGTHS[b])
        p = float((n * torch.sigmoid(att.v_p(torch.tanh(att.W_p(h_t[b, t]))))).detach())  # Eq. 10
        pos = naive_window(int(p // 1), 3, n)
        a = torch.softmax(torch.stack([h_t[b, t] @ h_bar[b, s] for s in pos]), 0)
        a = a * torch.tensor(
            [torch.exp(torch.tensor(-((s - p) ** 2) / (2 * 1.5**2))) for s in pos]
        )  # Eq. 11
        torch.testing.assert_close(dense[b, t, pos], a)
        torch.testing.assert_close(c_t[b, t], (a.unsqueeze(1) * h_bar[b, pos]).sum(0))


def test_local_p_renormalize_option_sums_to_one():
    att = build_attention("local_p", "general", d)
    att.renormalize = True
    _, mem = memory(att)
    _, align = att(torch.randn(B, T, d), mem, 0)
    torch.testing.assert_close(align.a_t.sum(-1), torch.ones(B, T))


def test_gaussian_uses_real_valued_p_t():
    pos = torch.tensor([[[2, 3, 4]]])
    g = gaussian(pos, torch.tensor([[3.5]]), sigma=1.0)
    torch.testing.assert_close(g[0, 0], torch.exp(-torch.tensor([2.25, 0.25, 0.25]) / 2))


@pytest.mark.parametrize(
    "att_name,score",
    [
        ("global", "dot"),
        ("global", "general"),
        ("global", "concat"),
        ("global", "location"),
        ("local_m", "dot"),
        ("local_m", "general"),
        ("local_m", "concat"),
        ("local_p", "dot"),
        ("local_p", "general"),
        ("local_p", "concat"),
    ],
)
def test_gradcheck_float64(att_name, score):
    att = build_attention(att_name, score, d).double()
    h_bar = torch.randn(B, S, d, dtype=torch.float64, requires_grad=True)
    h_t = torch.randn(B, 2, d, dtype=torch.float64, requires_grad=True)

    def f(h_t, h_bar):
        c_t, align = att(h_t, att.prepare(h_bar, LENGTHS), 3)
        return c_t, align.a_t

    assert torch.autograd.gradcheck(f, (h_t, h_bar), eps=1e-6, atol=1e-5)
    if att_name == "local_p":  # the position predictor learns through the Gaussian only
        c_t, _ = f(h_t, h_bar)
        c_t.sum().backward()
        assert att.W_p.weight.grad.abs().sum() > 0


@pytest.mark.parametrize("att_name", ["local_m", "local_p"])
def test_invalid_combination_raises_at_construction(att_name):
    from luong_lit.nn import ConfigError

    with pytest.raises(ConfigError, match=f"attention={att_name} score=location"):
        build_attention(att_name, "location", d)


def test_the_additive_mask_gives_the_filled_softmax_and_its_gradient_exactly():
    """Global attention adds ``Memory.bias`` (0 or -inf, made once a batch) to its scores: the
    same weights, bit for bit, as filling the padding with -inf, and the same gradient."""
    import torch

    from luong_lit.nn.attention import Memory, masked_softmax

    torch.manual_seed(0)
    src_len = torch.tensor([5, 2, 1])
    memory = Memory.of(torch.randn(3, 5, 4, dtype=torch.float64), torch.zeros(3, 5, 4),
                       src_len)  # fmt: skip
    scores = torch.randn(3, 2, 5, dtype=torch.float64, requires_grad=True)
    filled = masked_softmax(scores, memory.valid.unsqueeze(1))
    added = torch.softmax(scores + memory.bias.unsqueeze(1), dim=-1)
    assert torch.equal(filled, added) and bool((added[1, :, 2:] == 0).all())
    w = torch.randn_like(filled)
    (g1,) = torch.autograd.grad((filled * w).sum(), scores)
    (g2,) = torch.autograd.grad((added * w).sum(), scores)
    assert torch.equal(g1, g2)
