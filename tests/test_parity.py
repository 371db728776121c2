"""The ``fast`` engine (:mod:`luong_lit.nn.fast`) computes what the ``reference`` engine (the
plain modules of :mod:`luong_lit.nn`) computes with the same weights: losses, gradients, decoding
steps, greedy and beam translations.

Dropout is off (the two draw their masks differently). A fast path that drifts from the paper's
model fails here.
"""

from __future__ import annotations

import itertools

import pytest
import torch
from conftest import small_model

from luong_lit.data.loading.batching import collate
from luong_lit.decoding.beam import AUTHORS, BeamConfig, beam_search
from luong_lit.decoding.corpus import decode_corpus
from luong_lit.decoding.ensemble import Ensemble
from luong_lit.engines import FastEngine, ReferenceEngine, make_engine
from luong_lit.errors import ConfigError
from luong_lit.nn import Seq2Seq
from luong_lit.nn.fast.stepper import FastStepper

VARIANTS = [
    (a, s, f)
    for a, s, f in itertools.product(
        ["global", "local_m", "local_p"], ["dot", "general", "concat", "location"], [True, False]
    )
    if not (a != "global" and s == "location")
] + [("none", None, False)]


def model(att="global", score="general", feed=True, dtype=torch.float64, **kw) -> Seq2Seq:
    """A small model; both engines compute it."""
    torch.manual_seed(0)
    return small_model(
        src_vocab_size=23, tgt_vocab_size=29, attention=att, score=score, feed_input=feed, **kw
    ).to(dtype)


def ragged_batch(seed: int = 0):
    """Five pairs of ragged lengths (a one-word source and a one-word target among them)."""
    g = torch.Generator().manual_seed(seed)
    lens = [(7, 6), (1, 3), (5, 1), (4, 6), (6, 2)]
    return collate(
        [
            (
                i,
                torch.randint(4, 23, (s,), generator=g).tolist(),
                torch.randint(4, 29, (t,), generator=g).tolist(),
            )
            for i, (s, t) in enumerate(lens)
        ]
    )


@pytest.mark.parametrize("att,score,feed", VARIANTS)
@pytest.mark.parametrize(
    "extra", [{}, {"reverse_source": True, "src_eos": True, "tie_output": True}]
)
def test_losses_and_gradients_equal_the_reference(att, score, feed, extra):
    net = model(att, score, feed, **extra).train()
    batch = ragged_batch()
    results = []
    for engine in (FastEngine(), ReferenceEngine()):
        nll, tokens = engine.nll(net, batch, label_smoothing=0.1)
        grads = torch.autograd.grad(nll, list(net.parameters()), allow_unused=True)
        results.append((nll.detach(), tokens, grads))
    (nll_f, tok_f, g_f), (nll_r, tok_r, g_r) = results
    assert tok_f == tok_r
    torch.testing.assert_close(nll_f, nll_r)
    for (name, _), a, b in zip(net.named_parameters(), g_f, g_r):
        a = torch.zeros_like(b) if a is None and b is not None else a
        b = torch.zeros_like(a) if b is None and a is not None else b
        if a is not None:
            torch.testing.assert_close(a, b, msg=name)


@pytest.mark.parametrize("att,score,feed", VARIANTS)
def test_decoding_steps_equal_the_reference(att, score, feed):
    """The fast engine's decode-time form steps as the reference model's plain steps."""
    ref = model(att, score, feed).eval()
    batch = ragged_batch(1)
    with torch.no_grad():
        stepper = FastEngine().for_decoding(ref)
        (m_f, s_f), (m_r, s_r) = (
            stepper.encode(batch.src, batch.src_len),
            ref.encode(batch.src, batch.src_len),
        )
        for t in range(batch.tgt_in.size(1)):
            l_f, s_f, a_f = stepper.step(batch.tgt_in[:, t], s_f, m_f, t)
            l_r, s_r, a_r = ref.step(batch.tgt_in[:, t], s_r, m_r, t)
            torch.testing.assert_close(l_f, l_r)
            if a_r is not None:
                torch.testing.assert_close(
                    a_f.dense(batch.src.size(1)), a_r.dense(batch.src.size(1))
                )


@pytest.mark.parametrize("att", ["global", "local_m", "local_p"])
@pytest.mark.parametrize("search", ["greedy", "beam5", "authors"])
def test_translations_equal_the_reference(att, search):
    """Greedy, beam 5 and the authors' beam 12 give the same words and scores."""
    ref = model(att, "general", True, dtype=torch.float32).eval()
    g = torch.Generator().manual_seed(3)
    src_ids = [torch.randint(4, 23, (n,), generator=g).tolist() for n in (9, 1, 4, 12, 6, 3)]
    beam = {"greedy": None, "beam5": BeamConfig(beam_size=5, n_best=2), "authors": AUTHORS}[search]
    out_f = decode_corpus(FastEngine().for_decoding(ref), src_ids, 4, beam, keep_attention=True)
    out_r = decode_corpus(ref, src_ids, 4, beam, keep_attention=True)
    assert [t.ids for t in out_f] == [t.ids for t in out_r]
    if beam is not None:
        assert [t.score for t in out_f] == pytest.approx(
            [t.score for t in out_r], rel=1e-5, abs=1e-5
        )
        assert [[h.tokens for h in t.n_best] for t in out_f] == [
            [h.tokens for h in t.n_best] for t in out_r
        ]
    for a, b in zip(out_f, out_r):
        torch.testing.assert_close(a.attention, b.attention, rtol=1e-4, atol=1e-5)


def test_each_engine_gives_its_decode_time_form():
    net = model().eval()
    assert isinstance(FastEngine().for_decoding(net), FastStepper)
    assert ReferenceEngine().for_decoding(net) is net
    assert FastEngine().for_decoding(net.train()) is net  # dropout on: the model's own steps
    pair = FastEngine(int8="output").for_decoding(Ensemble([net.eval(), net]).eval())
    assert all(isinstance(m, FastStepper) and m.int8_output is not None for m in pair.members)
    with pytest.raises(ConfigError, match="form of the fast engine"):
        ReferenceEngine().for_decoding(net, "output")
    with pytest.raises(ConfigError, match="engine 'turbo' is unknown"):
        make_engine("turbo")


def test_beam_search_over_the_decode_time_form_equals_the_model_itself():
    net = model(dtype=torch.float32).eval()
    batch = ragged_batch(2)
    cfg = BeamConfig(beam_size=3, n_best=3)
    plain = beam_search(net, batch.src, batch.src_len, cfg)
    wrapped = beam_search(FastStepper(net), batch.src, batch.src_len, cfg)
    assert [[h.tokens for h in s] for s in plain] == [[h.tokens for h in s] for s in wrapped]
