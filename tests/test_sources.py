"""The official-source path: download (file:// URLs stand in for the network), verify, extract."""
from __future__ import annotations

import gzip
import hashlib
import io
import tarfile

import pytest

from luong_lit.data import DataError, read_lines
from luong_lit.data.sources import Remote, Source, resolve


def make_tgz(path, members: dict[str, str]) -> str:
    with tarfile.open(path, "w:gz") as tar:
        for name, text in members.items():
            data = text.encode("utf-8")
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return hashlib.md5(path.read_bytes()).hexdigest()


SGM = '<refset>\n<doc docid="1">\n<seg id="1">Hello &amp; welcome.</seg>\n<seg id="2"> Zweite Zeile </seg>\n</doc>\n</refset>\n'


def test_download_verify_extract_sgm_and_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("LUONG_LIT_CACHE", str(tmp_path / "cache"))
    md5 = make_tgz(tmp_path / "test.tgz", {"test/newstest-ref.de.sgm": SGM})
    src = Source("wmt/test.de.gz", Remote((tmp_path / "test.tgz").as_uri(), f"md5:{md5}"),
                 member="test/newstest-ref.de.sgm", fmt="sgm")
    path = resolve(src)
    assert path == tmp_path / "cache" / "text-v2" / "wmt" / "test.de.gz"
    assert read_lines(path) == ["Hello & welcome.", "Zweite Zeile"]
    (tmp_path / "test.tgz").unlink()  # a second use is served from the cache
    assert resolve(src) == path


def test_download_checksum_mismatch(tmp_path, monkeypatch):
    monkeypatch.setenv("LUONG_LIT_CACHE", str(tmp_path / "cache"))
    (tmp_path / "f.txt").write_text("a\nb\n")
    bad = Source("x/f.gz", Remote((tmp_path / "f.txt").as_uri(), "sha256:" + "0" * 64))
    with pytest.raises(DataError, match=r"f\.txt: checksum mismatch \(sha256 "):
        resolve(bad)
    good = Source("x/f.gz", Remote((tmp_path / "f.txt").as_uri(),
                                   "sha256:" + hashlib.sha256(b"a\nb\n").hexdigest()),
                  content_sha256=hashlib.sha256(b"a\nb\n").hexdigest(), head=1)
    with pytest.raises(DataError, match="checksum mismatch"):  # head=1 changes the text
        resolve(good)


def test_unreachable_source_says_how_to_work_offline(tmp_path, monkeypatch):
    monkeypatch.setenv("LUONG_LIT_CACHE", str(tmp_path / "cache"))
    src = Source("x/y.gz", Remote((tmp_path / "missing.txt").as_uri(), "sha256:0"))
    with pytest.raises(DataError, match="cannot download .* LUONG_LIT_DATA"):
        resolve(src)


def test_iwslt14_preparation_follows_fairseq(tmp_path, monkeypatch):
    from luong_lit.data import iwslt

    train_de = ["<url>http://x</url>", "<title>Ein Titel</title>", "Hallo Welt .", "Guten Tag !"] + \
               [f"Satz {i} ." for i in range(23)]
    train_en = ["<url>http://x</url>", "<title>A title</title>", "Hello world .", "Good day !"] + \
               [f"Sentence {i} ." for i in range(23)]
    members = {"de-en/train.tags.de-en.de": "\n".join(train_de), "de-en/train.tags.de-en.en": "\n".join(train_en)}
    for name in iwslt._TEST_SETS:
        for lang, text in (("de", "Test Satz"), ("en", "Test sentence")):
            members[f"de-en/IWSLT14.{name}.de-en.{lang}.xml"] = f'<doc>\n<seg id="1"> {text}, {name} </seg>\n</doc>'
    make_tgz(tmp_path / "de-en.tgz", members)
    out = iwslt.prepare(tmp_path / "de-en.tgz")
    assert out["train.en"][0] == "a title" and out["train.de"][1] == "hallo welt ."  # lowercased, no <url>
    assert len(out["valid.de"]) == 1 and out["valid.en"][0] == out_line(out, 23)
    assert len(out["train.de"]) + len(out["valid.de"]) == 26
    assert len(out["test.en"]) == 5 and out["test.en"][0] == "test sentence , ted.dev2010"


def out_line(out, n):
    """The n-th (1-based) cleaned English line before the valid split."""
    lines = ["a title", "hello world .", "good day !"] + [f"sentence {i} ." for i in range(23)]
    return lines[n - 1]


def test_extracted_lines_split_at_newlines_only(tmp_path):
    from luong_lit.data.io import text_lines

    text = "ein Satz\u2028mit Trenner\r\nzwei\x0cdrei\nvier\u0085\n"
    assert text_lines(text) == ["ein Satz\u2028mit Trenner", "zwei\x0cdrei", "vier\u0085"]
    assert text_lines("") == [] and text_lines("a\n\nb") == ["a", "", "b"]
    (tmp_path / "t.txt").write_bytes(text.encode("utf-8"))
    assert text_lines(text) == read_lines(tmp_path / "t.txt")  # extraction and reading agree


def test_iwslt14_unknown_split_fails_before_any_download():
    from luong_lit.data.corpora import corpus_source

    with pytest.raises(DataError, match="iwslt14_deen has no split 'dev'; choose from train, valid, test"):
        corpus_source("iwslt14_deen", "dev", "de")
