"""``luong_lit.decoding``: greedy search, ensembles, unknown-word replacement (footnote 14), forced
alignments, corpus decoding and worker processes."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch
from conftest import small_model, source_batch
from torch.nn import functional as F

from luong_lit.data.vocab import Vocab
from luong_lit.decoding import greedy_decode
from luong_lit.decoding.beam import beam_search
from luong_lit.decoding.corpus import decode_corpus, output_words
from luong_lit.decoding.ensemble import Ensemble, EnsembleError
from luong_lit.decoding.forced import attention_links, forced_attention
from luong_lit.decoding.search import BeamSearch, Hypothesis
from luong_lit.decoding.unk import replace_unks, word_alignment
from luong_lit.decoding.workers import imap_workers
from luong_lit.nn import Alignment, Memory
from luong_lit.nn.decoder import DecoderState


def _net(seed, attention="global", score="general", feed=True, V=20):
    torch.manual_seed(seed)
    return small_model(
        src_vocab_size=V,
        tgt_vocab_size=V,
        embed_size=16,
        hidden_size=16,
        attention=attention,
        score=score,
        feed_input=feed,
    ).eval()


def _square_or_die(x: int, die_at: int) -> int:
    if x == die_at:
        os._exit(3)  # a worker killed mid-run (out of memory, a signal)
    return x * x


def _threads(_item) -> int:
    return torch.get_num_threads()


class PatternStub(torch.nn.Module):
    """Attention forced to a known pattern: at step t all weight is on source position perm[t]."""

    def __init__(self, perm: list[int], content_based: bool) -> None:
        super().__init__()
        self.perm, self.content_based, self.w = (
            perm,
            content_based,
            torch.nn.Parameter(torch.zeros(1)),
        )

    def encode(self, src, src_len):
        B, S = src.shape
        ones = torch.ones(B, S, dtype=torch.bool)
        mem = Memory(torch.zeros(B, S, 1), torch.zeros(B, S, 1), src_len, ones, torch.zeros(B, S))
        return mem, DecoderState(torch.zeros(1, B, 1), torch.zeros(1, B, 1), torch.zeros(B, 1))

    def step(self, y, state, memory, t):
        B, S = memory.valid.shape
        a_t = torch.zeros(B, 1, S)
        a_t[:, 0, self.perm[t] % S] = 1.0
        return torch.zeros(B, 6), state, Alignment(a_t, None, None)


class WeightedStub(PatternStub):
    """A :class:`PatternStub` whose one attended position carries ``weight``."""

    def __init__(self, perm, content_based, weight):
        super().__init__(perm, content_based)
        self.weight = weight

    def step(self, y, state, memory, t):
        scores, state, align = super().step(y, state, memory, t)
        return scores, state, Alignment(align.a_t * self.weight, None, None)


# ------------------------------------------------------------------ ensembles
@pytest.mark.parametrize("combine", ["logits", "log_probs", "probs"])
def test_ensemble_of_two_copies_equals_the_model(combine):
    net = _net(0)
    ens = Ensemble([net, _net(0)], combine)
    src, src_len = source_batch(n=4, S=6, seed=3)
    mem, state = net.encode(src, src_len)
    emem, estate = ens.encode(src, src_len)
    y = torch.tensor([2, 5, 7, 9])
    for t in range(3):
        logits, state, a = net.step(y, state, mem, t)
        elogits, estate, ea = ens.step(y, estate, emem, t)
        torch.testing.assert_close(F.log_softmax(elogits, -1), F.log_softmax(logits, -1))
        torch.testing.assert_close(
            ea.dense(src.size(1)), 2 * a.dense(src.size(1))
        )  # summed, docs/paper_notes.md §9
        y = logits.argmax(-1)
    cfg = BeamSearch(beam=3, n_best=2)
    single, double = beam_search(net, src, src_len, cfg), beam_search(ens, src, src_len, cfg)
    assert [[h.ids for h in s] for s in single] == [[h.ids for h in s] for s in double]


def test_ensemble_logit_rule_is_the_mean_of_logits_and_differs_from_the_others():
    a, b = (
        _net(1),
        _net(2, "local_p", "dot", feed=False),
    )  # members may differ in attention and feeding
    src, src_len = source_batch(n=4, S=6, seed=3)
    y = torch.full((4,), 2)
    outs = {}
    for combine in ("logits", "log_probs", "probs"):
        ens = Ensemble([a, b], combine)
        mem, state = ens.encode(src, src_len)
        outs[combine] = F.log_softmax(ens.step(y, state, mem, 0)[0], -1)
    la = a.step(y, *reversed(a.encode(src, src_len)), 0)[0]
    lb = b.step(y, *reversed(b.encode(src, src_len)), 0)[0]
    torch.testing.assert_close(outs["logits"], F.log_softmax((la + lb) / 2, -1))
    torch.testing.assert_close(
        outs["probs"], torch.log((F.softmax(la, -1) + F.softmax(lb, -1)) / 2)
    )
    assert not torch.allclose(outs["logits"], outs["probs"])
    assert len(beam_search(Ensemble([a, b]), src, src_len, BeamSearch(beam=2))) == 4


def test_ensemble_rejects_different_vocabularies_and_unknown_rules():
    with pytest.raises(EnsembleError, match="different target vocabulary sizes"):
        Ensemble([_net(0, V=20), _net(0, V=21)])
    with pytest.raises(EnsembleError, match="combine='mean'"):
        Ensemble([_net(0)], "mean")
    with pytest.raises(EnsembleError, match="footnote 14"):
        _ = Ensemble([_net(0), _net(1, score="location")]).content_based


# ------------------------------------------------------------------ unknown words
def test_word_alignment_follows_footnote_14():
    # steps 0..3 (3 words + </s>); step t attends to source position t
    attention = torch.eye(4)[:, :4]
    assert word_alignment(attention, 3, content_based=True) == [1, 2, 3]  # a_{t+1} for y_t
    assert word_alignment(attention, 3, content_based=False) == [0, 1, 2]  # location: a_t
    assert word_alignment(attention, 3, True, convention="predicted") == [0, 1, 2]
    with pytest.raises(ValueError, match="convention"):
        word_alignment(attention, 3, True, convention="next")
    # cut at the length limit: 4 words, 4 steps, no step read the last word
    assert word_alignment(attention, 4, content_based=True) == [1, 2, 3, 3]
    assert word_alignment(attention, 4, content_based=False) == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="4 attention steps cannot align 5 words"):
        word_alignment(attention, 5, content_based=True)


def test_greedy_unk_replacement_of_a_translation_cut_at_the_length_limit():
    """A greedy output that hits its length limit still gets its ``<unk>`` replaced."""
    vocab = Vocab(["<pad>", "<unk>", "<s>", "</s>", "x"])
    net = small_model(src_vocab_size=5, tgt_vocab_size=5, num_layers=1).eval()
    with torch.no_grad():
        net.decoder.W_s.weight.zero_()
        net.decoder.W_s.bias.copy_(torch.tensor([0.0, 5.0, 0.0, -5.0, 0.0]))  # always <unk>
    src = [[4, 4, 4]]
    tr = decode_corpus(net, src, keep_attention=True)
    assert tr[0][0].ids == [1] * 9 and tr[0][0].attention.shape == (
        9,
        3,
    )  # floor(1.5 * 3) + 5 steps
    words = output_words(tr, vocab, [["a", "b", "c"]])[0]
    assert len(words) == 9 and set(words) <= {"a", "b", "c"}


def test_unk_replacement_copies_or_translates():
    src = ["the", "zorblax", "sings", "loudly"]
    words = ["der", "<unk>", "singt", "<unk>"]
    copied = replace_unks(words, src, [0, 1, 2, 3])
    assert copied == ["der", "zorblax", "singt", "loudly"]
    translated = replace_unks(words, src, [0, 1, 2, 3], {"loudly": "laut"})
    assert translated == ["der", "zorblax", "singt", "laut"]


def test_output_words_replace_through_the_attention_of_each_word():
    vocab = Vocab(["<pad>", "<unk>", "<s>", "</s>", "der", "hund"])
    # ids: der <unk> hund ; content-based, so word i uses step i+1's row
    att = torch.tensor([[1.0, 0, 0], [0, 0, 1.0], [0, 1.0, 0], [0, 0, 1.0]])  # (4 steps, S=3)
    tr = [[Hypothesis([4, 1, 5], None, att)], [Hypothesis([])]]
    src = [["the", "big", "dog"], []]
    assert output_words(tr, vocab) == [["der", "<unk>", "hund"], []]
    assert output_words(tr, vocab, src, content_based=True) == [["der", "big", "hund"], []]
    assert output_words(tr, vocab, src, content_based=False) == [["der", "dog", "hund"], []]


# ------------------------------------------------------------------ corpus decoding
def test_decode_corpus_keeps_order_and_empty_lines():
    net = _net(4)
    src_ids = [[5, 6, 7], [], [8, 9], [10, 11, 12, 13, 4]]
    out = decode_corpus(net, src_ids, batch_size=2)
    assert len(out) == 4 and out[1] == []
    for i in (0, 2, 3):
        alone, _ = greedy_decode(net, torch.tensor([src_ids[i]]), torch.tensor([len(src_ids[i])]))
        assert out[i][0].ids == alone[0]
    beam = decode_corpus(net, src_ids, batch_size=3, search=BeamSearch(beam=2), keep_attention=True)
    assert beam[3][0].attention.shape == (len(beam[3][0].ids) + 1, 5)


@pytest.mark.parametrize("search", [BeamSearch(beam=1), BeamSearch(beam=3, n_best=2)])
def test_decoding_in_worker_processes_equals_one_process(search):
    """Forked workers (``--workers``) return every sentence's output, in input order, equal
    to decoding in this process: ids, scores, n-best lists and attention alike."""
    net = _net(5, "local_p", "general")
    g = torch.Generator().manual_seed(9)
    src_ids = [
        torch.randint(4, 20, (int(n),), generator=g).tolist()
        for n in torch.randint(0, 9, (23,), generator=g)
    ]
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the workers get one thread each too: the same products, bit for bit
    try:
        one = decode_corpus(net, src_ids, batch_size=4, search=search, keep_attention=True)
        two = decode_corpus(
            net, src_ids, batch_size=4, search=search, keep_attention=True, workers=2
        )
    finally:
        torch.set_num_threads(threads)
    assert any(not s for s in src_ids) and len(two) == len(src_ids)
    for hyps_a, hyps_b in zip(one, two):
        assert [(h.ids, h.score) for h in hyps_a] == [(h.ids, h.score) for h in hyps_b]
        for a, b in zip(hyps_a, hyps_b):
            assert (a.attention is None and b.attention is None) or torch.equal(
                a.attention, b.attention
            )
    with pytest.raises(ValueError, match="--workers must be at least 1"):
        decode_corpus(net, src_ids, workers=0)


def test_worker_processes_keep_order_and_a_dead_worker_is_an_error_not_a_hang():
    assert list(imap_workers(_square_or_die, range(9), 2, -1)) == [x * x for x in range(9)]
    threads = torch.get_num_threads()
    torch.set_num_threads(4)
    try:  # the parent has run a team of threads: a forked worker must not start another
        torch.tanh(torch.randn(1 << 20)).sum()
        assert list(imap_workers(_threads, range(4), 2)) == [1] * 4
    finally:
        torch.set_num_threads(threads)
    with pytest.raises(RuntimeError, match="a decoding worker process died"):
        list(imap_workers(_square_or_die, range(9), 2, 4))


@pytest.mark.parametrize(
    "attention,score", [("global", "general"), ("local_p", "general"), ("local_m", "dot")]
)
def test_decoding_a_source_eos_model_attends_over_the_words(attention, score):
    """With ``src_eos`` the encoder reads one slot more; decoders report the S words only."""
    torch.manual_seed(0)
    net = small_model(
        embed_size=16, hidden_size=16, attention=attention, score=score, src_eos=True
    ).eval()
    src, src_len = source_batch(n=4, S=6, seed=3)
    hyps, attn = greedy_decode(net, src, src_len, return_attention=True)
    beams = beam_search(net, src, src_len, BeamSearch(beam=3), keep_attention=True)
    for b in range(len(hyps)):
        S = int(src_len[b])
        assert attn[b].shape[1] == S
        best = beams[b][0]
        assert best.attention.shape[-1] == src.size(1)  # callers keep [:, :S], the words
        assert (attn[b].sum(-1) <= 1 + 1e-6).all() and (best.attention.sum(-1) <= 1 + 1e-6).all()


def test_decoding_and_metrics_never_import_lightning():

    code = (
        "import sys, luong_lit.nn, luong_lit.decoding.corpus, luong_lit.decoding.ensemble, "
        "luong_lit.metrics, luong_lit.metrics.perplexity, luong_lit.data.text.dictionary\n"
        "print(sorted(m for m in sys.modules\n"
        "             if m.split('.')[0] in ('lightning', 'pytorch_lightning')))"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stdout.strip() == "[]"


@pytest.mark.parametrize("min_ratio,max_ratio", [(0.0, 1.5), (1.0, 1.5), (2.0, 3.0), (0.0, 0.5)])
def test_beam_size_one_keeps_the_length_bounds(min_ratio, max_ratio):
    from luong_lit.data.loading.batching import collate

    net = _net(5)
    with torch.no_grad():
        net.decoder.W_s.bias[3] += 4.0  # </s> first unless the minimum length forbids it
    src, src_len = source_batch(n=4, S=6, seed=3)
    ids = sorted(([int(w) for w in row[:n]] for row, n in zip(src, src_len)), key=lambda x: -len(x))
    cfg = BeamSearch(beam=1, min_len_ratio=min_ratio, max_len_ratio=max_ratio, max_len_extra=1)
    assert cfg.greedy
    greedy = [t[0].ids for t in decode_corpus(net, ids, search=cfg, batch_size=4)]  # greedy_decode
    batch = collate([(i, x, []) for i, x in enumerate(ids)])
    beam = [h[0].ids for h in beam_search(net, batch.src, batch.src_len, cfg)]
    assert greedy == beam
    for out, x in zip(greedy, ids):
        assert int(len(x) * min_ratio) <= len(out) <= int(len(x) * max_ratio) + 1
    assert min_ratio == 0 or any(len(out) == int(len(x) * min_ratio) for out, x in zip(greedy, ids))


def test_greedy_with_a_zero_length_limit_returns_empty_outputs():
    net = _net(5)
    src, src_len = source_batch(n=4, S=6, seed=3)
    none = BeamSearch(beam=1, max_len_ratio=0.0, max_len_extra=0)
    hyps, attn = greedy_decode(net, src, src_len, none, return_attention=True)
    assert hyps == [[]] * 4 and [a.shape for a in attn] == [(1, int(n)) for n in src_len]


@pytest.mark.parametrize("content_based", [True, False])
def test_alignment_extraction_on_a_forced_pattern(content_based):
    perm = [3, 1, 0, 2, 4]  # step t attends to source position perm[t]
    stub = PatternStub(perm, content_based)
    att = forced_attention(stub, [[5, 5, 5, 5, 5]], [[4, 4, 4, 4]])
    assert att[0].shape == (5, 5)  # 4 words + the </s> step
    links = attention_links(att, [4], content_based)[0]
    shift = 1 if content_based else 0  # footnote 14
    assert links == {(perm[j + shift], j) for j in range(4)}


def test_alignments_of_a_reversed_model_are_in_original_source_order():
    torch.manual_seed(0)
    rev = small_model(reverse_source=True).eval()
    fwd = small_model(reverse_source=False).eval()
    fwd.load_state_dict(rev.state_dict())
    src, tgt = [[4, 9, 13, 7, 11], [5, 6, 8]], [[10, 12, 14], [15, 4]]
    a_rev = forced_attention(rev, src, tgt)
    a_fwd = forced_attention(
        fwd, [s[::-1] for s in src], tgt
    )  # the same reading, flipped positions
    for r, f in zip(a_rev, a_fwd):
        torch.testing.assert_close(r, f.flip(1))


def test_ensemble_alignment_is_the_sum_of_its_members_attention():
    from luong_lit.decoding.ensemble import Ensemble

    torch.manual_seed(1)
    members = [small_model(attention=att).eval() for att in ("global", "local_m", "local_p")]
    src, tgt = [[4, 9, 13, 7, 11, 6, 5], [5, 6, 8]], [[10, 12, 14, 4], [15, 4]]
    summed = forced_attention(Ensemble(members), src, tgt)
    parts = [forced_attention(m, src, tgt) for m in members]
    for i, a in enumerate(summed):
        torch.testing.assert_close(a, sum(p[i] for p in parts))
    assert not torch.equal(summed[0].argmax(1), parts[0][0].argmax(1))  # the members do disagree


def test_member_links_with_one_convention_equal_the_ensembles_own_links():
    from luong_lit.decoding.ensemble import Ensemble
    from luong_lit.decoding.forced import member_links

    torch.manual_seed(3)
    members = [small_model(attention=att).eval() for att in ("global", "local_m", "local_p")]
    src = [[4, 9, 13, 7, 11, 6, 5], [5, 6, 8], [7, 7, 9, 12]]
    tgt = [[10, 12, 14, 4], [15, 4], [6, 9, 9, 11, 13]]
    for conv in ("paper", "predicted"):
        whole = forced_attention(Ensemble(members), src, tgt)
        want = attention_links(whole, [len(t) for t in tgt], True, conv)
        assert member_links(members, src, tgt, [conv] * 3) == want


@pytest.mark.parametrize("conv", ["paper", "predicted"])
def test_each_member_is_read_under_its_own_convention(conv):
    """The heavier member decides every link, shifted by one step under footnote 14 and not
    under the predicted-word convention; a location member may join content-based ones."""
    from luong_lit.decoding.forced import member_links

    light = PatternStub([0, 1, 2, 3, 4], content_based=False)  # location: a_t serves y_t
    heavy = WeightedStub([3, 1, 0, 2, 4], content_based=True, weight=3.0)
    links = member_links([light, heavy], [[5] * 5], [[4] * 4], ["paper", conv])[0]
    shift = 1 if conv == "paper" else 0
    assert links == {(heavy.perm[j + shift], j) for j in range(4)}
    solo = member_links([light], [[5] * 5], [[4] * 4], ["paper"])[0]
    assert solo == {(j, j) for j in range(4)}  # location: the step that predicted the word
