"""``luong_lit.metrics``: BLEU (tokenised, detokenised) against multi-bleu.perl and sacreBLEU,
length buckets, perplexity, AER and its diagnostics, unk-replacement precision."""

from __future__ import annotations

import math
from collections import Counter

import pytest
import sacrebleu
import torch
from conftest import small_model
from torch.nn import functional as F

from luong_lit.data.loading.batching import collate
from luong_lit.data.text.tokenize import MosesTokenizer, make_tokenizer
from luong_lit.metrics import bleu_by_length, corpus_bleu_detok, corpus_bleu_tok
from luong_lit.metrics.aer import (
    aer,
    aer_by_length,
    diagonal_links,
    link_offsets,
    pharaoh,
    position_links,
    read_talp,
    tail_share,
)
from luong_lit.metrics.bleu import rejoin_hyphens
from luong_lit.metrics.buckets import EDGES, length_groups, plot_bleu_by_length, tick_labels
from luong_lit.metrics.perplexity import perplexity
from luong_lit.metrics.unk_quality import replacement_quality


def multi_bleu(hyps, refs):
    """multi-bleu.perl written out: clipped n-gram precisions, geometric mean, brevity penalty."""
    match, total = [0] * 4, [0] * 4
    hyp_len = ref_len = 0
    for h, r in zip(hyps, refs):
        h, r = h.split(), r.split()
        hyp_len, ref_len = hyp_len + len(h), ref_len + len(r)
        for n in range(1, 5):
            hc = Counter(tuple(h[i : i + n]) for i in range(len(h) - n + 1))
            rc = Counter(tuple(r[i : i + n]) for i in range(len(r) - n + 1))
            match[n - 1] += sum(min(c, rc[g]) for g, c in hc.items())
            total[n - 1] += max(len(h) - n + 1, 0)
    if min(match) == 0:
        return 0.0
    log_p = sum(math.log(m / t) for m, t in zip(match, total)) / 4
    bp = 1.0 if hyp_len > ref_len else math.exp(1 - ref_len / hyp_len)
    return 100 * bp * math.exp(log_p)


HYPS = ["the cat sat on the mat .", "a dog runs in the green park", 'he said , " hello there " .']


REFS = ["the cat sat on a mat .", "a dog is running in the park", 'he said , " hello , there " .']


def test_moses_aggressive_hyphens_and_bleu_rejoin():
    tok = MosesTokenizer("en", aggressive=True)
    toks = tok.tokenize("A well-known fact.")
    assert toks == ["A", "well", "##AT##-##AT##", "known", "fact", "."]
    assert rejoin_hyphens(" ".join(toks)) == "A well-known fact ."
    assert tok.detokenize(toks) == "A well-known fact."


def test_tokenised_bleu_equals_sacrebleu_none():
    import sacrebleu

    hyps = ["a cat sat on the mat .", "the dog ran ."]
    refs = ["the cat sat on the mat .", "a dog ran fast ."]
    want = sacrebleu.corpus_bleu(hyps, [refs], tokenize="none").score
    assert corpus_bleu_tok(hyps, refs) == pytest.approx(want)


def test_tokenised_bleu_equals_multi_bleu_written_out():
    assert corpus_bleu_tok(HYPS, REFS) == pytest.approx(multi_bleu(HYPS, REFS), abs=1e-6)
    assert corpus_bleu_tok(HYPS, REFS) == pytest.approx(
        sacrebleu.corpus_bleu(HYPS, [REFS], tokenize="none").score
    )
    assert corpus_bleu_tok(REFS, REFS) == pytest.approx(100.0)


def test_hyphens_are_rejoined_before_scoring():
    assert rejoin_hyphens("a well ##AT##-##AT## known man") == "a well-known man"
    hyp, ref = ["a well ##AT##-##AT## known man is here"], ["a well-known man is here"]
    assert corpus_bleu_tok(hyp, ref) == pytest.approx(100.0)
    assert corpus_bleu_tok(hyp, ref, rejoin=False) < 100.0


def test_detokenised_bleu_equals_sacrebleu_13a_on_raw_text():
    from sacremoses import MosesTokenizer

    raw_hyps = [
        "The cat sat on the mat.",
        "A dog runs in the green park!",
        'He said, "Hello there."',
    ]
    raw_refs = [
        "The cat sat on a mat.",
        "A dog is running in the park!",
        'He said, "Hello, there."',
    ]
    tok = MosesTokenizer("en")
    tok_hyps = [tok.tokenize(h, return_str=True, escape=False) for h in raw_hyps]
    ours = corpus_bleu_detok(tok_hyps, raw_refs, "en", refs_detokenized=True)
    assert ours == pytest.approx(sacrebleu.corpus_bleu(raw_hyps, [raw_refs], tokenize="13a").score)
    tok_refs = [tok.tokenize(r, return_str=True, escape=False) for r in raw_refs]
    assert corpus_bleu_detok(tok_hyps, tok_refs, "en") == pytest.approx(ours)
    with pytest.raises(ValueError, match="2 hypotheses but 3 references"):
        corpus_bleu_tok(HYPS[:2], REFS)


def test_an_output_unk_is_one_wrong_word_in_detokenised_bleu():
    refs = ["ein großer hund läuft im park .", "zwei männer spielen fußball ."]
    with_unk = ["ein <unk> hund läuft im park .", "zwei <unk> spielen fußball ."]
    with_word = ["ein xyzzy hund läuft im park .", "zwei xyzzy spielen fußball ."]
    assert corpus_bleu_detok(with_unk, refs, "de") == pytest.approx(
        corpus_bleu_detok(with_word, refs, "de")
    )
    assert corpus_bleu_tok(with_unk, refs) == pytest.approx(corpus_bleu_tok(with_word, refs))


def test_length_buckets_partition_the_corpus(tmp_path):
    groups = length_groups([0, 9, 10, 19, 69, 70, 120], EDGES)
    assert [(label, idx) for label, _, idx in groups] == [
        ("<10", [0, 1]),
        ("10-19", [2, 3]),
        ("60-69", [4]),
        ("70+", [5, 6]),
    ]
    lens = [3, 12, 15, 25, 72]
    hyps, refs = HYPS + REFS[:2], REFS + REFS[:2]
    rows = bleu_by_length(hyps, refs, lens, min_sentences=0)
    assert [r["bucket"] for r in rows] == ["<10", "10-19", "20-29", "70+"]
    assert sum(r["n"] for r in rows) == 5
    assert rows[1]["bleu"] == pytest.approx(corpus_bleu_tok(hyps[1:3], refs[1:3]))
    png = plot_bleu_by_length({"a": rows, "b": rows[:2]}, tmp_path / "fig6.png")
    assert png.stat().st_size > 1000 and png.read_bytes()[:4] == b"\x89PNG"


def test_seeds_bleu_by_length_is_their_mean_per_bucket(tmp_path):
    import statistics

    from luong_lit.metrics.buckets import mean_buckets

    one = [{"bucket": "<10", "n": 3, "bleu": 30.0}, {"bucket": "10-19", "n": 2, "bleu": 20.0}]
    two = [{"bucket": "<10", "n": 3, "bleu": 34.0}, {"bucket": "10-19", "n": 2, "bleu": 21.0}]
    rows = mean_buckets([one, two])
    assert [r["bleu"] for r in rows] == [32.0, 20.5] and [r["n"] for r in rows] == [3, 2]
    assert rows[0]["bleu_sd"] == pytest.approx(statistics.stdev([30.0, 34.0]))
    assert mean_buckets([one]) == one  # one run: unchanged, no sd
    with pytest.raises(ValueError, match="share their length buckets"):
        mean_buckets([one, one[:1]])
    png = plot_bleu_by_length({"mean": rows, "one": one}, tmp_path / "fig6.png")
    assert png.read_bytes()[:4] == b"\x89PNG"


def test_perplexity_is_exp_of_mean_token_nll():
    torch.manual_seed(0)
    net = small_model(src_vocab_size=12, tgt_vocab_size=12, num_layers=1, score="dot").eval()
    examples = [(0, [4, 5, 6], [7, 8]), (1, [9, 10], [11, 4, 5])]
    nll, tokens = 0.0, 0
    for ex in examples:  # one sentence at a time, with F.cross_entropy
        b = collate([ex])
        with torch.no_grad():
            h_tilde, _ = net(b.src, b.src_len, b.tgt_in)
            logits = net.logits(h_tilde)[0]  # (T, V)
        nll += float(torch.nn.functional.cross_entropy(logits, b.tgt_out[0], reduction="sum"))
        tokens += b.tgt_out.size(1)
    assert perplexity(net, examples, batch_size=2) == pytest.approx(
        math.exp(nll / tokens), rel=1e-5
    )


def test_bleu_counts_words_not_sentencepiece_pieces(tmp_path):
    from luong_lit.data.text.tokenize import WhitespaceTokenizer
    from luong_lit.metrics.bleu import bleu_words

    words = ["neighbourhood", "windowsill", "catastrophe", "mattress", "outstanding", "thereafter"]
    lines = [" ".join(words[(i + k) % 6] for k in range(i % 5 + 2)) for i in range(300)]
    sp = make_tokenizer("sentencepiece", "en", lines, tmp_path, model_type="bpe", vocab_size=40)
    hyp, ref = (
        "windowsill catastrophe mattress thereafter",
        "windowsill mattress catastrophe thereafter",
    )
    pieces_h, pieces_r = sp.tokenize(hyp), sp.tokenize(ref)
    assert len(pieces_r) > len(ref.split())  # the pieces are not the words
    assert bleu_words(pieces_h, sp) == hyp.split() and bleu_words(pieces_r, sp) == ref.split()
    words = corpus_bleu_tok(
        [" ".join(bleu_words(pieces_h, sp))], [" ".join(bleu_words(pieces_r, sp))]
    )
    assert words == pytest.approx(sacrebleu.corpus_bleu([hyp], [[ref]], tokenize="none").score)
    assert words != pytest.approx(corpus_bleu_tok([" ".join(pieces_h)], [" ".join(pieces_r)]))
    assert bleu_words(["a", "b"], WhitespaceTokenizer()) == ["a", "b"] == bleu_words(("a", "b"))
    glued = bleu_words(["\u2581the", "\u2581w", "<unk>", "in", "\u2581mat"], sp)
    assert glued == ["the", "w<unk>in", "mat"]  # an unknown piece spoils one word, not three


@pytest.mark.parametrize("attention,feed", [("global", True), ("local_p", True), ("none", False)])
def test_stepwise_perplexity_equals_teacher_forced_and_scores_ensembles(attention, feed):
    from luong_lit.decoding.ensemble import Ensemble
    from luong_lit.metrics.perplexity import stepwise_perplexity

    torch.manual_seed(0)
    nets = [
        small_model(
            src_vocab_size=12, tgt_vocab_size=12, attention=attention, feed_input=feed
        ).eval()
        for _ in range(2)
    ]
    examples = [(0, [4, 5, 6, 7], [7, 8]), (1, [9, 10], [11, 4, 5, 6]), (2, [5], [4])]
    assert stepwise_perplexity(nets[0], examples, 2) == pytest.approx(
        perplexity(nets[0], examples), rel=1e-5
    )
    assert stepwise_perplexity(Ensemble([nets[0]] * 2), examples) == pytest.approx(
        perplexity(nets[0], examples), rel=1e-5
    )  # two copies of one model are that model
    nll = 0.0  # log of the mean of the members' probabilities, one word at a time
    for _, src, tgt in examples:
        b = collate([(0, src, tgt)])
        with torch.no_grad():
            logp = [
                F.log_softmax(n.logits(n(b.src, b.src_len, b.tgt_in)[0])[0], -1) for n in nets
            ]  # (T, V) x2
        mixed = torch.logsumexp(torch.stack(logp), 0) - math.log(2)  # (T, V)
        nll -= float(mixed.gather(1, b.tgt_out[0].unsqueeze(1)).sum())
    tokens = sum(len(t) + 1 for _, _, t in examples)
    assert stepwise_perplexity(Ensemble(nets, "probs"), examples) == pytest.approx(
        math.exp(nll / tokens), rel=1e-5
    )


def test_int8_decoding_leaves_stepwise_scoring_on_the_float_weights():
    """An int8 decoding wrapper changes the search's scores, never the model's own."""
    from luong_lit.decoding.ensemble import Ensemble
    from luong_lit.engines import FastEngine
    from luong_lit.metrics.perplexity import stepwise_perplexity

    torch.manual_seed(0)
    nets = [
        small_model(src_vocab_size=40, tgt_vocab_size=40, embed_size=16, hidden_size=16).eval()
        for _ in range(2)
    ]
    examples = [
        (
            i,
            [4 + (i + k) % 30 for k in range(3 + i % 4)],
            [5 + (2 * i + k) % 30 for k in range(2 + i % 5)],
        )
        for i in range(12)
    ]
    ens = Ensemble(nets).eval()
    exact = stepwise_perplexity(ens, examples)
    int8 = FastEngine(int8="all").for_decoding(ens)
    assert stepwise_perplexity(int8, examples) != exact  # the int8 copies do change the scores
    assert stepwise_perplexity(ens, examples) == exact  # the ensemble itself is untouched


def test_small_length_buckets_merge_with_their_neighbours_and_show_their_counts():
    """50 sentences under 10 words, 30 of 10-19, 2 of 30-39 (test_2016_flickr's long tail)."""
    lens = [5] * 50 + [15] * 30 + [33] * 2
    hyps = [HYPS[i % len(HYPS)] for i in range(82)]
    refs = [REFS[i % len(REFS)] for i in range(82)]
    rows = bleu_by_length(hyps, refs, lens, min_sentences=20)
    assert [(r["bucket"], r["n"]) for r in rows] == [("<10", 50), ("10-39", 32)]
    assert rows[1]["bleu"] == pytest.approx(corpus_bleu_tok(hyps[50:], refs[50:]))
    assert tick_labels(rows) == ["<10\n(n=50)", "10-39\n(n=32)"]
    small_first = bleu_by_length(hyps[:12], refs[:12], [5] * 2 + [15] * 10, min_sentences=5)
    assert [(r["bucket"], r["n"]) for r in small_first] == [("<20", 12)]


def test_unk_replacement_precision_and_its_ceiling_on_a_hand_made_case():
    plain = [
        ["ein", "<unk>", "fährt", "<unk>"],  # two unks
        ["die", "katze"],  # none
        ["<unk>", "ist", "hier"],  # one
    ]
    replaced = [["ein", "Obama", "fährt", "Paris"], ["die", "katze"], ["hier", "ist", "hier"]]
    refs = [["ein", "Obama", "fährt", "nach", "Berlin"], ["die", "katze"], ["Anna", "ist", "hier"]]
    srcs = [["a", "Obama", "drives", "Berlin", "Paris"], ["the", "cat"], ["Anna", "is", "here"]]
    q = replacement_quality(plain, replaced, refs, srcs)
    # Obama is right, Paris is not; "hier" is in the reference but already used by the output
    assert (q["unk"], q["in_reference"]) == (3, 1) and q["precision"] == pytest.approx(1 / 3)
    # Obama and Berlin could fill sentence 1's two unks, Anna sentence 3's: all three
    assert q["could"] == 3 and q["oracle"] == 1.0
    with pytest.raises(ValueError, match="replaced by"):
        replacement_quality([["<unk>"]], [["a", "b"]], [["a"]], [["a"]])


# ------------------------------------------------------------------ AER
def test_aer_on_a_hand_made_example(tmp_path):
    gold = tmp_path / "gold.talp"
    gold.write_text("1-1 2-2 2p3\n1-1 1p2\n1-1 2-2 3-3\n", encoding="utf-8")
    sure_possible = read_talp(gold)
    assert sure_possible[0] == ({(0, 0), (1, 1)}, {(0, 0), (1, 1), (1, 2)})
    hyps = [{(0, 0), (1, 2)}, {(0, 1), (1, 1)}, {(0, 0), (1, 1), (2, 2)}]
    # |A| = 7, |S| = 6, |A∩S| = 1 + 0 + 3, |A∩P| = 2 + 1 + 3
    assert aer(hyps, sure_possible) == pytest.approx(1 - (4 + 6) / (7 + 6))
    assert aer([s for s, _ in sure_possible], sure_possible) == pytest.approx(0.0)
    flipped = read_talp(gold, flip=True)
    assert flipped[0][1] == {(0, 0), (1, 1), (2, 1)}
    assert pharaoh({(2, 1), (0, 0)}) == "0-0 2-1"
    assert diagonal_links(4, 2) == {(1, 0), (3, 1)}
    gold.write_text("1-1 x\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"gold\.talp:1: 'x' is not"):
        read_talp(gold)


def test_aer_by_length_is_the_corpus_aer_of_each_group():
    g = torch.Generator().manual_seed(0)
    lens = [int(n) for n in torch.randint(1, 45, (60,), generator=g)]

    def random_links(n):
        return {(int(torch.randint(n, (1,), generator=g)), j) for j in range(n)}

    gold = [(random_links(n), random_links(n) | random_links(n)) for n in lens]
    gold = [(s, s | p) for s, p in gold]
    hyps = [random_links(n) for n in lens]
    rows = aer_by_length(hyps, gold, lens)
    assert sum(r["n"] for r in rows) == len(lens)
    for row in rows:  # each group scored alone, as a naive filter would
        lo, _, hi = row["bucket"].rstrip("+").partition("-")
        idx = [i for i, n in enumerate(lens) if n >= int(lo) and (not hi or n <= int(hi))]
        assert row["n"] == len(idx)
        assert row["aer"] == pytest.approx(aer([hyps[i] for i in idx], [gold[i] for i in idx]))
    (only,) = aer_by_length(hyps, gold, lens, edges=(100,))
    assert only["aer"] == pytest.approx(aer(hyps, gold))
    with pytest.raises(ValueError, match="3 lengths"):
        aer_by_length(hyps, gold, [1, 2, 3])


def test_tail_share_counts_links_on_the_last_source_words():
    collapsed = [{(9, j) for j in range(10)}, {(0, 0), (1, 1)}]  # the second is too short
    diagonal = [{(j, j) for j in range(10)}, {(0, 0), (1, 1)}]
    assert tail_share(collapsed, [10, 2]) == pytest.approx(1.0)
    assert tail_share(diagonal, [10, 2]) == pytest.approx(0.3)
    assert tail_share(diagonal, [10, 2], k=1) == pytest.approx(0.1)
    assert tail_share(diagonal, [5, 2]) == 0.0  # no sentence is longer than 2k words


def test_link_offsets_measure_how_far_links_lie_from_gold():
    gold = [({(0, 0), (1, 1), (2, 2)}, {(0, 0), (1, 1), (2, 2), (3, 2)}), ({(4, 0)}, {(4, 0)})]
    hyps = [{(0, 0), (0, 1), (3, 2), (3, 5)}, {(0, 0)}]  # (3, 5): no gold link for word 5
    off = link_offsets(hyps, gold, clip=3)
    assert list(off) == ["-3", "-2", "-1", "+0", "+1", "+2", "+3"]
    # links: 0 (exact), -1 (one word early), 0 (the possible link 3-2), -4 clipped to -3
    assert off == pytest.approx(
        {"-3": 0.25, "-2": 0, "-1": 0.25, "+0": 0.5, "+1": 0, "+2": 0, "+3": 0}
    )
    late = link_offsets([{(1, 0), (2, 1)}], [({(0, 0), (1, 1)}, {(0, 0), (1, 1)})])
    assert late["+1"] == 1.0


def test_length_blind_diagonal_follows_the_target_position():
    assert position_links(3, 5) == {(0, 0), (1, 1), (2, 2), (2, 3), (2, 4)}
    assert position_links(0, 2) == set()
    assert position_links(4, 4) == diagonal_links(4, 4)  # equal lengths: both diagonals agree
