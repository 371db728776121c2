"""Ensembles, unknown-word replacement, dictionaries and corpus decoding."""

from __future__ import annotations

import gzip
import importlib.util
import os

import pytest
import torch
from conftest import small_model
from torch.nn import functional as F

from luong_lit.alignment.eflomal import eflomal_links
from luong_lit.data.io import DataError
from luong_lit.data.text.dictionary import dictionary_from_links, load_dictionary, parse_links
from luong_lit.data.vocab import Vocab
from luong_lit.decoding import greedy_decode
from luong_lit.decoding.beam import BeamConfig, beam_search
from luong_lit.decoding.corpus import Translation, decode_corpus, output_words
from luong_lit.decoding.ensemble import Ensemble, EnsembleError
from luong_lit.decoding.unk import replace_unks, word_alignment
from luong_lit.decoding.workers import imap_workers


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


def _batch(n=4, S=6):
    g = torch.Generator().manual_seed(3)
    src_len = torch.randint(2, S + 1, (n,), generator=g)
    src = torch.randint(4, 20, (n, S), generator=g)
    src[torch.arange(S) >= src_len.unsqueeze(1)] = 0
    return src, src_len


# ------------------------------------------------------------------ ensembles
@pytest.mark.parametrize("combine", ["logits", "log_probs", "probs"])
def test_ensemble_of_two_copies_equals_the_model(combine):
    net = _net(0)
    ens = Ensemble([net, _net(0)], combine)
    src, src_len = _batch()
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
    cfg = BeamConfig(beam_size=3, n_best=2)
    single, double = beam_search(net, src, src_len, cfg), beam_search(ens, src, src_len, cfg)
    assert [[h.tokens for h in s] for s in single] == [[h.tokens for h in s] for s in double]


def test_ensemble_logit_rule_is_the_mean_of_logits_and_differs_from_the_others():
    a, b = (
        _net(1),
        _net(2, "local_p", "dot", feed=False),
    )  # members may differ in attention and feeding
    src, src_len = _batch()
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
    assert len(beam_search(Ensemble([a, b]), src, src_len, BeamConfig(beam_size=2))) == 4


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
    assert tr[0].ids == [1] * 9 and tr[0].attention.shape == (9, 3)  # floor(1.5 * 3) + 5 steps
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
    tr = [Translation([4, 1, 5], att), Translation([])]
    src = [["the", "big", "dog"], []]
    assert output_words(tr, vocab) == [["der", "<unk>", "hund"], []]
    assert output_words(tr, vocab, src, content_based=True) == [["der", "big", "hund"], []]
    assert output_words(tr, vocab, src, content_based=False) == [["der", "dog", "hund"], []]


# ------------------------------------------------------------------ dictionaries
def test_dictionary_file_formats_and_errors(tmp_path):
    probs = tmp_path / "p.txt"
    probs.write_text("house Haus 0.2\nhouse Gebäude 0.7\ncat Katze 1.0\n", encoding="utf-8")
    assert load_dictionary(probs) == {"house": "Gebäude", "cat": "Katze"}
    muse = tmp_path / "muse.txt.gz"
    with gzip.open(muse, "wt", encoding="utf-8") as fh:
        fh.write("the die\nthe der\ncat katze\n")
    assert load_dictionary(muse) == {"the": "die", "cat": "katze"}
    bad = tmp_path / "bad.txt"
    bad.write_text("house Haus\nlonely\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"bad\.txt:2: expected"):
        load_dictionary(bad)
    bad.write_text("house Haus often\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"bad\.txt:1: the probability 'often'"):
        load_dictionary(bad)


def test_dictionary_from_links_keeps_frequent_pairs():
    src = [["the", "house"]] * 3 + [["a", "house"]]
    tgt = [["das", "haus"]] * 3 + [["ein", "gebäude"]]
    links = [parse_links("0-0 1-1")] * 4
    d = dictionary_from_links(src, tgt, links, min_count=2)
    assert d == {"the": "das", "house": "haus"}  # 'a'-'ein' and 'house'-'gebäude' seen once
    with pytest.raises(DataError, match="'0:1'"):
        parse_links("0:1", "x")


@pytest.mark.skipif(importlib.util.find_spec("eflomal") is None, reason="eflomal is not installed")
def test_eflomal_dictionary_on_a_toy_corpus():
    pairs = [
        ("the house", "das haus"),
        ("the cat", "die katze"),
        ("a house", "ein haus"),
        ("the dog", "der hund"),
        ("a cat", "eine katze"),
        ("a dog", "ein hund"),
    ]
    src = [s.split() for s, _ in pairs] * 20
    tgt = [t.split() for _, t in pairs] * 20
    d = dictionary_from_links(src, tgt, eflomal_links(src, tgt), min_count=10)
    assert d["house"] == "haus" and d["cat"] == "katze" and d["dog"] == "hund"


# ------------------------------------------------------------------ corpus decoding
def test_decode_corpus_keeps_order_and_empty_lines():
    net = _net(4)
    src_ids = [[5, 6, 7], [], [8, 9], [10, 11, 12, 13, 4]]
    out = decode_corpus(net, src_ids, batch_size=2)
    assert len(out) == 4 and out[1].ids == []
    for i in (0, 2, 3):
        alone, _ = greedy_decode(net, torch.tensor([src_ids[i]]), torch.tensor([len(src_ids[i])]))
        assert out[i].ids == alone[0]
    beam = decode_corpus(
        net, src_ids, batch_size=3, beam=BeamConfig(beam_size=2), keep_attention=True
    )
    assert beam[3].attention.shape == (len(beam[3].ids) + 1, 5)


@pytest.mark.parametrize("beam", [None, BeamConfig(beam_size=3, n_best=2)])
def test_decoding_in_worker_processes_equals_one_process(beam):
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
        one = decode_corpus(net, src_ids, batch_size=4, beam=beam, keep_attention=True)
        two = decode_corpus(net, src_ids, batch_size=4, beam=beam, keep_attention=True, workers=2)
    finally:
        torch.set_num_threads(threads)
    assert any(not s for s in src_ids) and len(two) == len(src_ids)
    for a, b in zip(one, two):
        assert a.ids == b.ids and a.score == b.score
        assert [h.tokens for h in a.n_best] == [h.tokens for h in b.n_best]
        assert (a.attention is None and b.attention is None) or torch.equal(
            a.attention, b.attention
        )
    with pytest.raises(ValueError, match="--workers must be at least 1"):
        decode_corpus(net, src_ids, workers=0)


def _square_or_die(x: int, die_at: int) -> int:
    if x == die_at:
        os._exit(3)  # a worker killed mid-run (out of memory, a signal)
    return x * x


def _threads(_item) -> int:
    return torch.get_num_threads()


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
    src, src_len = _batch()
    hyps, attn = greedy_decode(net, src, src_len, return_attention=True)
    beams = beam_search(net, src, src_len, BeamConfig(beam_size=3), keep_attention=True)
    for b in range(len(hyps)):
        S = int(src_len[b])
        assert attn[b].shape[1] == S
        best = beams[b][0]
        assert best.attention.shape[-1] == src.size(1)  # callers keep [:, :S], the words
        assert (attn[b].sum(-1) <= 1 + 1e-6).all() and (best.attention.sum(-1) <= 1 + 1e-6).all()


def test_decoding_and_metrics_never_import_lightning():
    import subprocess
    import sys

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
    from luong_lit.decoding.corpus import is_greedy

    net = _net(5)
    with torch.no_grad():
        net.decoder.W_s.bias[3] += 4.0  # </s> first unless the minimum length forbids it
    src, src_len = _batch()
    ids = sorted(([int(w) for w in row[:n]] for row, n in zip(src, src_len)), key=lambda x: -len(x))
    cfg = BeamConfig(beam_size=1, min_len_ratio=min_ratio, max_len_ratio=max_ratio, max_len_extra=1)
    assert is_greedy(cfg)
    greedy = [t.ids for t in decode_corpus(net, ids, 4, cfg)]  # runs greedy_decode
    batch = collate([(i, x, []) for i, x in enumerate(ids)])
    beam = [h[0].tokens for h in beam_search(net, batch.src, batch.src_len, cfg)]
    assert greedy == beam
    for out, x in zip(greedy, ids):
        assert int(len(x) * min_ratio) <= len(out) <= int(len(x) * max_ratio) + 1
    assert min_ratio == 0 or any(len(out) == int(len(x) * min_ratio) for out, x in zip(greedy, ids))


def test_greedy_with_a_zero_length_limit_returns_empty_outputs():
    net = _net(5)
    src, src_len = _batch()
    hyps, attn = greedy_decode(
        net, src, src_len, max_len_ratio=0.0, max_len_extra=0, return_attention=True
    )
    assert hyps == [[]] * 4 and [a.shape for a in attn] == [(1, int(n)) for n in src_len]
