"""Data: clear errors naming the file and line, vocabularies, length handling, batching."""

from __future__ import annotations

import gzip

import pytest
from conftest import SHARED_DATA

from luong_lit.data import (
    BucketBatchSampler,
    DataError,
    TranslationDataModule,
    Vocab,
    read_lines,
    read_parallel,
)
from luong_lit.data.sources.fetch import Remote, Source, resolve
from luong_lit.data.store.prepare import length_filter
from luong_lit.data.text.tokenize import MosesTokenizer, make_tokenizer
from luong_lit.metrics.bleu import corpus_bleu_tok, rejoin_hyphens


def test_parallel_files_of_different_lengths(tmp_path):
    (tmp_path / "a.en").write_text("one\ntwo\nthree\n")
    (tmp_path / "a.de").write_text("eins\nzwei\n")
    with pytest.raises(DataError, match=r"a\.en has 3 lines but .*a\.de has 2.*ends after line 2"):
        read_parallel(tmp_path / "a.en", tmp_path / "a.de")


def test_empty_and_missing_files(tmp_path):
    (tmp_path / "empty.txt").write_text("")
    with pytest.raises(DataError, match=r"empty\.txt: file is empty"):
        read_lines(tmp_path / "empty.txt")
    with pytest.raises(DataError, match=r"nope\.txt: file does not exist"):
        read_lines(tmp_path / "nope.txt")


@pytest.mark.parametrize("gz", [False, True])
def test_undecodable_bytes_name_file_and_line(tmp_path, gz):
    data = b"fine\nalso fine\n" + b"bad \xff byte\n"
    path = tmp_path / ("x.txt.gz" if gz else "x.txt")
    path.write_bytes(gzip.compress(data) if gz else data)
    with pytest.raises(
        DataError, match=r"x\.txt(\.gz)?:3: not valid UTF-8 \(byte 0xff at column 5\)"
    ):
        read_lines(path)


def test_unknown_dataset_name():
    with pytest.raises(DataError, match="unknown dataset 'wmt99'.*multi30k"):
        TranslationDataModule(dataset="wmt99")


def test_vocab_top_k_and_min_freq():
    sents = [["a", "b", "b", "c", "c", "c"], ["d"]]
    assert Vocab.build(sents, max_size=2).itos[4:] == ["c", "b"]
    assert Vocab.build(sents, min_freq=2).itos[4:] == ["c", "b"]
    v = Vocab.build(sents)
    assert v.itos[:4] == ["<pad>", "<unk>", "<s>", "</s>"]
    assert v.decode(v.encode(["c", "zzz"]) + [3, 5]) == ["c", "<unk>"]


def test_length_filter_and_truncate():
    src = [["x"] * 3, ["x"] * 60, [], ["x"] * 10]
    tgt = [["y"] * 3, ["y"] * 5, ["y"], ["y"] * 55]
    s, t = length_filter(src, tgt, 50, "filter")
    assert [len(x) for x in s] == [3]  # empty and overlong pairs dropped (paper §4.1)
    s, t = length_filter(src, tgt, 50, "truncate")
    assert [len(x) for x in s] == [3, 50, 10] and [len(x) for x in t] == [3, 5, 50]


def test_batches_sorted_within_chunks_and_deterministic():
    tgt_lens = [(i * 7) % 23 + 1 for i in range(200)]
    sampler = BucketBatchSampler(tgt_lens, tgt_lens, batch_size=10, chunk_batches=4, seed=3)
    batches = [b.tolist() for b in sampler.batches()]
    assert sorted(i for b in batches for i in b) == list(range(200))
    for b in batches:  # each batch is a run of a length-sorted chunk: spread is small
        assert max(tgt_lens[i] for i in b) - min(tgt_lens[i] for i in b) <= 12
    assert batches == [
        b.tolist() for b in sampler.batches()
    ]  # same epoch, same order (resume-safe)
    sampler.set_epoch(1)
    assert batches != [b.tolist() for b in sampler.batches()]


def test_tokens_per_batch_respects_budget():
    tgt_lens = [(i * 5) % 17 + 1 for i in range(300)]
    sampler = BucketBatchSampler(tgt_lens, tgt_lens, batch_size=60, batch_by="tokens")
    for b in sampler.batches():
        assert len(b) == 1 or (max(tgt_lens[i] for i in b) + 1) * len(b) <= 60


def test_moses_aggressive_hyphens_and_bleu_rejoin():
    tok = MosesTokenizer("en", aggressive=True)
    toks = tok.tokenize("A well-known fact.")
    assert toks == ["A", "well", "##AT##-##AT##", "known", "fact", "."]
    assert rejoin_hyphens(" ".join(toks)) == "A well-known fact ."
    assert tok.detokenize(toks) == "A well-known fact."


def test_sentencepiece_trained_and_cached(tmp_path):
    lines = [f"the cat number {i} sat on the mat" for i in range(200)]
    a = make_tokenizer("sentencepiece", "en", lines, tmp_path, model_type="bpe", vocab_size=60)
    b = make_tokenizer("sentencepiece", "en", lines, tmp_path, model_type="unigram", vocab_size=60)
    assert a.model_path.is_file() and b.model_path.is_file() and a.model_path != b.model_path
    mtime = a.model_path.stat().st_mtime_ns
    again = make_tokenizer("sentencepiece", "en", lines, tmp_path, model_type="bpe", vocab_size=60)
    assert again.model_path.stat().st_mtime_ns == mtime  # reused from the cache
    assert "".join(a.tokenize("the cat sat")).replace("▁", " ").strip() == "the cat sat"


def test_tokenised_bleu_equals_sacrebleu_none():
    import sacrebleu

    hyps = ["a cat sat on the mat .", "the dog ran ."]
    refs = ["the cat sat on the mat .", "a dog ran fast ."]
    want = sacrebleu.corpus_bleu(hyps, [refs], tokenize="none").score
    assert corpus_bleu_tok(hyps, refs) == pytest.approx(want)


def test_mirror_checksum_mismatch_is_reported(tmp_path):
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "f.gz").write_bytes(gzip.compress(b"hello\n"))
    src = Source("c/f.gz", Remote("https://example.org/f", "sha256:0"), content_sha256="0" * 64)
    with pytest.raises(DataError, match=r"f\.gz: checksum mismatch"):
        resolve(src, tmp_path)
    with pytest.raises(DataError, match="does not exist in the data mirror"):
        resolve(Source("c/g.gz", Remote("https://example.org/g", "sha256:0")), tmp_path)


@pytest.mark.skipif(not SHARED_DATA.is_dir(), reason="needs the local data mirror")
@pytest.mark.parametrize("src_lang,tgt_lang", [("en", "de"), ("de", "en")])
def test_multi30k_from_mirror_both_directions(src_lang, tgt_lang):
    dm = TranslationDataModule(
        "multi30k",
        src_lang,
        tgt_lang,
        test={"t": "test_2016_flickr"},
        min_freq=2,
        vocab_size=None,
        mirror=str(SHARED_DATA),
    )
    dm.setup()
    assert len(dm.splits["dev"].src_ids) == 1014 and len(dm.splits["t"].tgt_tokens) == 1000
    assert len(dm.train_store) == 29000
    from collections import Counter

    from luong_lit.data import read_lines

    counts = Counter(
        w
        for ln in read_lines(SHARED_DATA / "multi30k/tok/train.lc.norm.tok.en.gz")
        for w in ln.split()
    )
    en_vocab = dm.src_vocab if src_lang == "en" else dm.tgt_vocab
    assert len(en_vocab) == sum(c >= 2 for c in counts.values()) + 4  # plus the 4 specials
