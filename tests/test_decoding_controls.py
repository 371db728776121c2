"""Sampling and target prefixes in :mod:`luong_lit.decoding`: sampling's limits are greedy
search, a seed reproduces it, a sample's score is its forced log-probability; a prefix is kept
and the search goes on from the state its forced steps leave."""

from __future__ import annotations

import pytest
import torch
from conftest import small_model, source_batch

from luong_lit.data.vocab import BOS_ID, PAD_ID
from luong_lit.decoding.beam import beam_search
from luong_lit.decoding.corpus import decode_corpus
from luong_lit.decoding.forced import forced_pass
from luong_lit.decoding.greedy import greedy_decode
from luong_lit.decoding.prefix import Prefix
from luong_lit.decoding.sampling import filtered, sample
from luong_lit.decoding.search import BeamSearch, Sampling


def net_and_batch(seed: int = 0):
    """A random model whose outputs vary with what it has read (its weights ten times the usual),
    and which, as a trained one, never predicts ``<pad>`` or ``<s>``; and a batch of sources."""
    torch.manual_seed(seed)
    net = small_model(embed_size=16, hidden_size=16).eval()
    with torch.no_grad():
        for p in net.parameters():
            p.mul_(10.0)
        net.decoder.W_s.bias[[PAD_ID, BOS_ID]] = -1e4
    return net, *source_batch(6, 7, seed)


def ids(found) -> list[list[list[int]]]:
    return [[h.ids for h in hyps] for hyps in found]


def sampling(**options) -> Sampling:
    return Sampling(**options)


# ------------------------------------------------------------------------ sampling
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_sampling_towards_temperature_0_and_top_k_1_is_greedy_search(seed):
    net, src, src_len = net_and_batch(seed)
    greedy, _ = greedy_decode(net, src, src_len)
    cold = sample(net, src, src_len, sampling(temperature=1e-6, seed=seed))
    top1 = sample(net, src, src_len, sampling(top_k=1, temperature=3.0, seed=seed))
    assert ids(cold) == ids(top1) == [[h] for h in greedy]


def test_a_seed_reproduces_the_samples_and_another_seed_draws_others():
    net, src, src_len = net_and_batch()
    cfg = sampling(n_best=4, top_p=0.9, seed=7)
    first, again = (ids(sample(net, src, src_len, cfg)) for _ in range(2))
    other = ids(sample(net, src, src_len, sampling(n_best=4, top_p=0.9, seed=8)))
    assert first == again and first != other
    assert all(len(hyps) == 4 for hyps in first)


def test_a_corpus_sampled_with_a_seed_is_the_same_in_any_number_of_processes():
    net, _, _ = net_and_batch()
    sources = [[4 + (i * j) % 15 for j in range(2 + i % 5)] for i in range(9)]
    cfg = sampling(n_best=2, seed=3)
    one = decode_corpus(net, sources, search=cfg, batch_size=2)
    assert ids(one) == ids(decode_corpus(net, sources, search=cfg, batch_size=2, workers=2))
    fresh = [ids(decode_corpus(net, sources, search=sampling(n_best=2), batch_size=2))]
    assert ids(one) != fresh[0]  # no seed: new samples each call


def test_a_samples_score_is_its_log_probability_under_the_model_best_first():
    net, src, src_len = net_and_batch()
    found = sample(net, src, src_len, sampling(n_best=3, temperature=1.5, seed=1))
    for b, hyps in enumerate(found):
        n = int(src_len[b])
        forced = forced_pass(net, [src[b, :n].tolist()] * 3, [h.ids for h in hyps], scores=True)
        assert [h.score for h in hyps] == pytest.approx([float(f.logprob.sum()) for f in forced])
        assert [h.score for h in hyps] == sorted((h.score for h in hyps), reverse=True)


def test_top_k_and_top_p_keep_the_most_probable_words():
    logits = torch.tensor([[0.5, 0.3, 0.15, 0.05]]).log()  # probabilities, most probable first
    kept = lambda **o: torch.isfinite(filtered(logits, sampling(**o)))[0].tolist()  # noqa: E731
    assert kept() == [True] * 4
    assert kept(top_k=3) == [True, True, True, False]
    assert kept(top_p=0.6) == [True, True, False, False]  # 0.5 < 0.6 <= 0.5 + 0.3
    assert kept(top_p=0.4) == [True, False, False, False]
    assert kept(top_p=0.9, top_k=2) == [True, True, False, False]


# ------------------------------------------------------------------------ prefixes
class Primed:
    """``model`` after forced decoding of ``prefix`` (the same for every sentence): ``encode``
    runs the prefix's steps; the steps go on from there, the first reading its last word."""

    def __init__(self, model, prefix: list[int]) -> None:
        self.model, self.prefix = model, prefix

    def __getattr__(self, name):
        return getattr(self.model, name)

    def encode(self, src, src_len):
        memory, state = self.model.encode(src, src_len)
        for t, y in enumerate([BOS_ID, *self.prefix[:-1]]):
            _, state, _ = self.model.step(torch.full_like(src_len, y), state, memory, t)
        return memory, state

    def step(self, y_prev, state, memory, t):
        if t == 0:
            y_prev = torch.full_like(y_prev, self.prefix[-1])
        return self.model.step(y_prev, state, memory, t + len(self.prefix))


PREFIX = [7, 11, 5]


def test_greedy_search_keeps_the_prefix_and_goes_on_from_its_forced_steps():
    net, src, src_len = net_and_batch()
    prefix = Prefix.of([PREFIX] * len(src), src.device)
    n = len(PREFIX)
    full, _ = greedy_decode(net, src, src_len, BeamSearch(beam=1, max_len_extra=8), prefix=prefix)
    rest, _ = greedy_decode(
        Primed(net, PREFIX), src, src_len, BeamSearch(beam=1, max_len_extra=8 - n)
    )
    assert [h[:n] for h in full] == [PREFIX] * len(src)
    assert [h[n:] for h in full] == rest


def test_beam_search_keeps_the_prefix_and_goes_on_from_its_forced_steps():
    net, src, src_len = net_and_batch()
    n, cfg = len(PREFIX), BeamSearch(beam=3, n_best=3, max_len_extra=8)
    prefix = Prefix.of([PREFIX] * len(src), src.device)
    full = beam_search(net, src, src_len, cfg, prefix=prefix)
    rest = beam_search(
        Primed(net, PREFIX), src, src_len, BeamSearch(beam=3, n_best=3, max_len_extra=8 - n)
    )
    forced = forced_pass(net, [s[:m].tolist() for s, m in zip(src, src_len)], [PREFIX] * len(src),
                         scores=True)  # fmt: skip
    for hyps, cont, f in zip(full, rest, forced):
        assert [h.ids[:n] for h in hyps] == [PREFIX] * 3
        assert [h.ids[n:] for h in hyps] == [h.ids for h in cont]
        prefix_logp = float(f.logprob[:n].sum())  # the prefix's words, not its </s>
        assert [h.score for h in hyps] == pytest.approx([h.score + prefix_logp for h in cont])


def test_prefixes_of_different_lengths_share_a_batch_in_every_search():
    net, src, src_len = net_and_batch()
    given = [[], [9], [8, 8], [], [4, 5, 6, 7], [10]]
    prefix = Prefix.of(given, src.device)
    greedy, _ = greedy_decode(net, src, src_len, prefix=prefix)
    beam = beam_search(net, src, src_len, BeamSearch(beam=2, n_best=2), prefix=prefix)
    drawn = sample(net, src, src_len, sampling(n_best=2, seed=0), prefix=prefix)
    for b, p in enumerate(given):
        alone = Prefix.of([p], src.device)
        one = greedy_decode(net, src[b : b + 1], src_len[b : b + 1], prefix=alone)[0][0]
        assert greedy[b][: len(p)] == p and greedy[b] == one
        assert all(h.ids[: len(p)] == p for h in beam[b] + drawn[b])
