"""``luong_lit.decoding.beam``: batched beam search against greedy and one sentence at a time,
n-best lists, length bounds and penalties, the authors' decoder."""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch
from beam_helpers import B_, TRAP, A, BigramStub
from conftest import small_model, source_batch

from luong_lit.data.vocab import BOS_ID, EOS_ID
from luong_lit.decoding import greedy_decode
from luong_lit.decoding.beam import beam_search
from luong_lit.decoding.search import BeamSearch, parse_length_penalty


def run(model, cfg, S=4, n=1):
    src = torch.full((n, S), 7)
    return beam_search(model, src, torch.full((n,), S), cfg)


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    return small_model(embed_size=16, hidden_size=16).eval()


def test_beam_finds_the_better_path_greedy_misses():
    stub = BigramStub(TRAP)
    greedy, _ = greedy_decode(stub, torch.full((1, 4), 7), torch.tensor([4]))
    assert greedy[0][0] == A
    best = run(stub, BeamSearch(beam=2))[0][0]
    assert best.ids == [B_] and best.score == pytest.approx(math.log(0.4))


def test_n_best_order_and_scores_include_eos():
    hyps = run(BigramStub(TRAP), BeamSearch(beam=3, n_best=3))[0]
    assert [h.ids for h in hyps] == [[B_], [A], [A, A]]
    assert [h.score for h in hyps] == pytest.approx(
        [math.log(0.4), math.log(0.6 * 0.5), math.log(0.6 * 0.5 * 0.5)]
    )
    assert all(h1.score >= h2.score for h1, h2 in zip(hyps, hyps[1:]))


def test_authors_stack_rule_stops_at_stack_size_and_takes_the_highest_raw_score():
    C = 6  # [A] ends first (0.45) while B C </s> (0.5) is still live
    stub = BigramStub(
        {BOS_ID: {A: 0.5, B_: 0.5}, A: {EOS_ID: 0.9, A: 0.1}, B_: {C: 1.0}, C: {EOS_ID: 1.0}}, V=8
    )
    assert run(stub, BeamSearch(beam=2))[0][0].ids == [B_, C]  # exact: live 0.5 > 0.45
    assert run(stub, BeamSearch(beam=2, stack_size=1))[0][0].ids == [A]  # stops at one finished
    two = run(stub, BeamSearch(beam=2, stack_size=2, n_best=2))[0]
    assert [h.ids for h in two] == [[B_, C], [A]]  # the stack, best raw score first
    assert [h.score for h in two] == pytest.approx([math.log(0.5), math.log(0.45)])


def test_authors_length_bounds_count_eos_in_the_source():
    from luong_lit.decoding.search import AUTHORS

    loop = BigramStub(
        {BOS_ID: {A: 0.9, EOS_ID: 0.1}, A: {A: 0.9, EOS_ID: 0.1}}, V=16
    )  # V >= beam 12
    short = BigramStub({BOS_ID: {EOS_ID: 0.9, A: 0.1}, A: {EOS_ID: 0.9, A: 0.1}}, V=16)
    for S in (3, 4, 7):  # between floor(0.5 (S + 1)) and floor(1.5 (S + 1)) words
        assert len(run(loop, AUTHORS, S=S)[0][0].ids) == int(1.5 * (S + 1))
        assert len(run(short, AUTHORS, S=S)[0][0].ids) == int(0.5 * (S + 1))


def test_a_beam_wider_than_the_vocabulary_is_refused():
    with pytest.raises(
        ValueError, match="beam size 12 is larger than the target vocabulary of 6 words"
    ):
        run(BigramStub(TRAP), BeamSearch(beam=12))


def test_min_and_max_length_bounds():
    stub = BigramStub({BOS_ID: {EOS_ID: 0.9, A: 0.1}, A: {EOS_ID: 0.9, A: 0.1}})
    assert run(stub, BeamSearch(beam=2))[0][0].ids == []
    # min length floor(0.5 * 4) = 2 words: </s> is barred at steps 0 and 1
    assert run(stub, BeamSearch(beam=2, min_len_ratio=0.5))[0][0].ids == [A, A]
    loop = BigramStub({BOS_ID: {A: 1.0}, A: {A: 1.0}})
    # max length floor(1.0 * 4) + 1 = 5 words, then </s> is forced
    assert run(loop, BeamSearch(beam=2, max_len_ratio=1.0, max_len_extra=1))[0][0].ids == [A] * 5


def test_length_penalty_prefers_longer_hypotheses():
    stub = BigramStub({BOS_ID: {EOS_ID: 0.5, A: 0.5}, A: {EOS_ID: 0.45, A: 0.55}})
    raw = run(stub, BeamSearch(beam=3, max_len_ratio=1.0, max_len_extra=0))[0][0]
    avg_cfg = BeamSearch(beam=3, max_len_ratio=1.0, max_len_extra=0, length_penalty="avg")
    avg = run(stub, avg_cfg)[0][0]
    assert raw.ids == [] and len(avg.ids) > 0


def test_length_penalty_settings_parse_or_name_the_bad_value():
    from luong_lit.training.callbacks import BeamBleuCallback

    assert [parse_length_penalty(v) for v in (None, "none", "avg", "0.6", 1)] == [
        None,
        None,
        "avg",
        0.6,
        1.0,
    ]
    assert BeamBleuCallback(length_penalty="avg").search.length_penalty == "avg"
    with pytest.raises(ValueError, match="'sqrt'"):
        BeamBleuCallback(length_penalty="sqrt")


def test_beam_size_one_equals_greedy(model):
    src, src_len = source_batch()
    greedy, _ = greedy_decode(model, src, src_len)
    beam = beam_search(model, src, src_len, BeamSearch(beam=1))
    assert [h[0].ids for h in beam] == greedy


def test_batched_equals_one_sentence_at_a_time(model):
    src, src_len = source_batch(6)
    cfg = BeamSearch(beam=4, n_best=2)
    batched = beam_search(model, src, src_len, cfg)
    for i in range(6):
        n = int(src_len[i])
        alone = beam_search(model, src[i : i + 1, :n], src_len[i : i + 1], cfg)[0]
        assert [h.ids for h in alone] == [h.ids for h in batched[i]]
        assert [h.score for h in alone] == pytest.approx([h.score for h in batched[i]], abs=1e-4)
        assert batched[i][0].attention.shape == (len(batched[i][0].ids) + 1, src.size(1))


def test_a_model_without_attention_keeps_its_unks():
    from luong_lit.decoding.corpus import decode_corpus
    from luong_lit.decoding.unk import render

    torch.manual_seed(0)
    none = small_model(
        embed_size=16, hidden_size=16, num_layers=1, attention="none", score=None, feed_input=False
    ).eval()
    out = decode_corpus(
        none, [[5, 6, 7], [8, 9]], search=BeamSearch(beam=3), batch_size=2, keep_attention=True
    )
    assert all(h.attention is None for hyps in out for h in hyps)
    itos = ["<pad>", "<unk>", "<s>", "</s>", "x", "y"]
    rendered = render([4, 1, 5], itos, ["a", "b"], out[0][0].attention, none.content_based)
    assert rendered.words == ["x", "<unk>", "y"] and rendered.replaced == {}


@pytest.mark.parametrize("every", [3, 8])
def test_a_trained_models_search_reads_the_host_every_k_steps_to_the_same_translations(every):
    """Greedy and beam search read on the host every ``every`` steps only (a GPU's setting;
    finished sentences stay in the batch meanwhile): a trained checkpoint's translations,
    n-best lists, scores and attention equal those of a read at every step."""
    from pathlib import Path

    from luong_lit.checkpoint import load_model
    from luong_lit.data.loading.batching import collate
    from luong_lit.decoding.search import AUTHORS

    net = load_model(Path(__file__).parent / "data" / "checkpoint_v1.ckpt")[0]
    g = torch.Generator().manual_seed(5)
    srcs = [torch.randint(4, 14, (int(n),), generator=g).tolist() for n in (9, 3, 6, 1, 12, 5)]
    batch = collate([(i, s, []) for i, s in enumerate(srcs)])
    src, src_len = batch.src, batch.src_len
    for cfg in (BeamSearch(beam=4, n_best=3), BeamSearch(beam=3, length_penalty=0.6), AUTHORS):
        cfg = dataclasses.replace(cfg, beam=min(cfg.beam, 10))  # 14 target words
        step, kth = (beam_search(net, src, src_len, cfg, every=e) for e in (1, every))
        assert [[(h.ids, h.score, h.norm_score) for h in s] for s in step] == [
            [(h.ids, h.score, h.norm_score) for h in s] for s in kth
        ]
        for a, b in zip(step, kth):
            assert all(torch.equal(x.attention, y.attention) for x, y in zip(a, b))
    assert greedy_decode(net, src, src_len, every=1) == greedy_decode(
        net, src, src_len, every=every
    )
