"""BLEU (tokenised and detokenised), length buckets and perplexity against hand-written versions."""
from __future__ import annotations

import math
from collections import Counter

import pytest
import sacrebleu
import torch

from luong_lit.data.batching import collate
from luong_lit.metrics import bleu_by_length, corpus_bleu_detok, corpus_bleu_tok
from luong_lit.metrics.bleu import rejoin_hyphens
from luong_lit.metrics.buckets import bucket_label, plot_bleu_by_length
from luong_lit.metrics.perplexity import perplexity
from luong_lit.nn import Seq2Seq


def multi_bleu(hyps, refs):
    """multi-bleu.perl written out: clipped n-gram precisions, geometric mean, brevity penalty."""
    match, total = [0] * 4, [0] * 4
    hyp_len = ref_len = 0
    for h, r in zip(hyps, refs):
        h, r = h.split(), r.split()
        hyp_len, ref_len = hyp_len + len(h), ref_len + len(r)
        for n in range(1, 5):
            hc = Counter(tuple(h[i:i + n]) for i in range(len(h) - n + 1))
            rc = Counter(tuple(r[i:i + n]) for i in range(len(r) - n + 1))
            match[n - 1] += sum(min(c, rc[g]) for g, c in hc.items())
            total[n - 1] += max(len(h) - n + 1, 0)
    if min(match) == 0:
        return 0.0
    log_p = sum(math.log(m / t) for m, t in zip(match, total)) / 4
    bp = 1.0 if hyp_len > ref_len else math.exp(1 - ref_len / hyp_len)
    return 100 * bp * math.exp(log_p)


HYPS = ["the cat sat on the mat .", "a dog runs in the green park", "he said , \" hello there \" ."]
REFS = ["the cat sat on a mat .", "a dog is running in the park", "he said , \" hello , there \" ."]


def test_tokenised_bleu_equals_multi_bleu_written_out():
    assert corpus_bleu_tok(HYPS, REFS) == pytest.approx(multi_bleu(HYPS, REFS), abs=1e-6)
    assert corpus_bleu_tok(HYPS, REFS) == pytest.approx(
        sacrebleu.corpus_bleu(HYPS, [REFS], tokenize="none").score)
    assert corpus_bleu_tok(REFS, REFS) == pytest.approx(100.0)


def test_hyphens_are_rejoined_before_scoring():
    assert rejoin_hyphens("a well ##AT##-##AT## known man") == "a well-known man"
    hyp, ref = ["a well ##AT##-##AT## known man is here"], ["a well-known man is here"]
    assert corpus_bleu_tok(hyp, ref) == pytest.approx(100.0)
    assert corpus_bleu_tok(hyp, ref, rejoin=False) < 100.0


def test_detokenised_bleu_equals_sacrebleu_13a_on_raw_text():
    from sacremoses import MosesTokenizer

    raw_hyps = ["The cat sat on the mat.", "A dog runs in the green park!", "He said, \"Hello there.\""]
    raw_refs = ["The cat sat on a mat.", "A dog is running in the park!", "He said, \"Hello, there.\""]
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
        corpus_bleu_detok(with_word, refs, "de"))
    assert corpus_bleu_tok(with_unk, refs) == pytest.approx(corpus_bleu_tok(with_word, refs))


def test_length_buckets_partition_the_corpus(tmp_path):
    assert [bucket_label(n) for n in (0, 9, 10, 19, 69, 70, 120)] == ["<10", "<10", "10-19", "10-19",
                                                                       "60-69", "70+", "70+"]
    lens = [3, 12, 15, 25, 72]
    hyps, refs = HYPS + REFS[:2], REFS + REFS[:2]
    rows = bleu_by_length(hyps, refs, lens)
    assert [r["bucket"] for r in rows] == ["<10", "10-19", "20-29", "70+"]
    assert sum(r["n"] for r in rows) == 5
    assert rows[1]["bleu"] == pytest.approx(corpus_bleu_tok(hyps[1:3], refs[1:3]))
    png = plot_bleu_by_length({"a": rows, "b": rows[:2]}, tmp_path / "fig6.png")
    assert png.stat().st_size > 1000 and png.read_bytes()[:4] == b"\x89PNG"


def test_perplexity_is_exp_of_mean_token_nll():
    torch.manual_seed(0)
    net = Seq2Seq(12, 12, 8, 8, 1, 0.0, "global", "dot", True).eval()
    examples = [(0, [4, 5, 6], [7, 8]), (1, [9, 10], [11, 4, 5])]
    nll, tokens = 0.0, 0
    for ex in examples:  # one sentence at a time, with F.cross_entropy
        b = collate([ex])
        with torch.no_grad():
            h_tilde, _ = net(b.src, b.src_len, b.tgt_in)
            logits = net.logits(h_tilde)[0]  # (T, V)
        nll += float(torch.nn.functional.cross_entropy(logits, b.tgt_out[0], reduction="sum"))
        tokens += b.tgt_out.size(1)
    assert perplexity(net, examples, batch_size=2) == pytest.approx(math.exp(nll / tokens), rel=1e-5)
