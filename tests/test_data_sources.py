"""``luong_lit.data.sources``: the corpora registry, downloads checked against their checksums, a
local mirror, IWSLT'14's preparation and corpora released tokenised."""

from __future__ import annotations

import gzip
import hashlib
import io
import tarfile

import pytest
from conftest import DATA_MIRROR, needs_mirror

from luong_lit.data import (
    DataError,
    TranslationDataModule,
    read_lines,
)
from luong_lit.data.sources.fetch import Remote, Source, resolve
from luong_lit.data.text.tokenize import MosesTokenizer


def make_tgz(path, members: dict[str, str]) -> str:
    with tarfile.open(path, "w:gz") as tar:
        for name, text in members.items():
            data = text.encode("utf-8")
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return hashlib.md5(path.read_bytes()).hexdigest()


SGM = (
    '<refset>\n<doc docid="1">\n<seg id="1">Hello &amp; welcome.</seg>\n'
    '<seg id="2"> Zweite Zeile </seg>\n</doc>\n</refset>\n'
)


def out_line(out, n):
    """The n-th (1-based) cleaned English line before the valid split."""
    lines = ["a title", "hello world .", "good day !"] + [f"sentence {i} ." for i in range(23)]
    return lines[n - 1]


def _serve(directory):
    """A quiet HTTP server on 127.0.0.1 over ``directory``; returns (server, request paths)."""
    import functools
    import http.server
    import threading

    seen: list[str] = []

    class Handler(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args) -> None:
            seen.append(self.path)

    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(Handler, directory=str(directory))
    )
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, seen


def _official_like_archive(tmp_path) -> tuple[str, dict[str, list[str]]]:
    """A small archive laid out like training-parallel-europarl-v7.tgz (several pairs inside)."""
    text = {
        "en": ["Resumption of the session", "I declare resumed the session .", "Thank you ."],
        "de": [
            "Wiederaufnahme der Sitzungsperiode",
            "Ich erkläre die Sitzung für wieder aufgenommen .",
            "Vielen Dank .",
        ],
    }
    members = {
        f"training/europarl-v7.de-en.{lang}": "\n".join(lines) + "\n"
        for lang, lines in text.items()
    }
    members["training/europarl-v7.fr-en.en"] = "Not this one\n" * 3
    (tmp_path / "www").mkdir()
    make_tgz(tmp_path / "www" / "europarl.tgz", members)
    return hashlib.sha256((tmp_path / "www" / "europarl.tgz").read_bytes()).hexdigest(), text


def test_unknown_dataset_name():
    with pytest.raises(DataError, match="unknown dataset 'wmt99'.*multi30k"):
        TranslationDataModule(dataset="wmt99")


def test_mirror_checksum_mismatch_is_reported(tmp_path):
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "f.gz").write_bytes(gzip.compress(b"hello\n"))
    src = Source("c/f.gz", Remote("https://example.org/f", "sha256:0"), content_sha256="0" * 64)
    with pytest.raises(DataError, match=r"f\.gz: checksum mismatch"):
        resolve(src, tmp_path)
    with pytest.raises(DataError, match="does not exist in the data mirror"):
        resolve(Source("c/g.gz", Remote("https://example.org/g", "sha256:0")), tmp_path)


@needs_mirror
@pytest.mark.parametrize("src_lang,tgt_lang", [("en", "de"), ("de", "en")])
def test_multi30k_from_mirror_both_directions(src_lang, tgt_lang):
    dm = TranslationDataModule(
        dataset="multi30k",
        src_lang=src_lang,
        tgt_lang=tgt_lang,
        test={"t": "test_2016_flickr"},
        min_freq=2,
        vocab_size=None,
        mirror=str(DATA_MIRROR),
    )
    dm.setup()
    assert len(dm.splits["dev"].src_ids) == 1014 and len(dm.splits["t"].tgt_tokens) == 1000
    assert len(dm.train_store) == 29000
    from collections import Counter

    from luong_lit.data import read_lines

    counts = Counter(
        w
        for ln in read_lines(DATA_MIRROR / "multi30k/tok/train.lc.norm.tok.en.gz")
        for w in ln.split()
    )
    en_vocab = dm.src_vocab if src_lang == "en" else dm.tgt_vocab
    assert len(en_vocab) == sum(c >= 2 for c in counts.values()) + 4  # plus the 4 specials


def test_download_verify_extract_sgm_and_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("LUONG_LIT_CACHE", str(tmp_path / "cache"))
    md5 = make_tgz(tmp_path / "test.tgz", {"test/newstest-ref.de.sgm": SGM})
    src = Source(
        "wmt/test.de.gz",
        Remote((tmp_path / "test.tgz").as_uri(), f"md5:{md5}"),
        member="test/newstest-ref.de.sgm",
        fmt="sgm",
    )
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
    good = Source(
        "x/f.gz",
        Remote((tmp_path / "f.txt").as_uri(), "sha256:" + hashlib.sha256(b"a\nb\n").hexdigest()),
        content_sha256=hashlib.sha256(b"a\nb\n").hexdigest(),
        head=1,
    )
    with pytest.raises(DataError, match="checksum mismatch"):  # head=1 changes the text
        resolve(good)


def test_unreachable_source_says_how_to_work_offline(tmp_path, monkeypatch):
    monkeypatch.setenv("LUONG_LIT_CACHE", str(tmp_path / "cache"))
    src = Source("x/y.gz", Remote((tmp_path / "missing.txt").as_uri(), "sha256:0"))
    with pytest.raises(DataError, match="cannot download .* LUONG_LIT_DATA"):
        resolve(src)


def test_iwslt14_preparation_follows_fairseq(tmp_path, monkeypatch):
    from luong_lit.data.sources import iwslt

    train_de = [
        "<url>http://x</url>",
        "<title>Ein Titel</title>",
        "Hallo Welt .",
        "Guten Tag !",
    ] + [f"Satz {i} ." for i in range(23)]
    train_en = ["<url>http://x</url>", "<title>A title</title>", "Hello world .", "Good day !"] + [
        f"Sentence {i} ." for i in range(23)
    ]
    members = {
        "de-en/train.tags.de-en.de": "\n".join(train_de),
        "de-en/train.tags.de-en.en": "\n".join(train_en),
    }
    for name in iwslt._TEST_SETS:
        for lang, text in (("de", "Test Satz"), ("en", "Test sentence")):
            members[f"de-en/IWSLT14.{name}.de-en.{lang}.xml"] = (
                f'<doc>\n<seg id="1"> {text}, {name} </seg>\n</doc>'
            )
    make_tgz(tmp_path / "de-en.tgz", members)
    out = iwslt.prepare(tmp_path / "de-en.tgz")
    assert (
        out["train.en"][0] == "a title" and out["train.de"][1] == "hallo welt ."
    )  # lowercased, no <url>
    assert len(out["valid.de"]) == 1 and out["valid.en"][0] == out_line(out, 23)
    assert len(out["train.de"]) + len(out["valid.de"]) == 26
    assert len(out["test.en"]) == 5 and out["test.en"][0] == "test sentence , ted.dev2010"


def test_extracted_lines_split_at_newlines_only(tmp_path):
    from luong_lit.data.io import text_lines

    text = "ein Satz\u2028mit Trenner\r\nzwei\u2029drei\nvier\u0085\n"
    assert text_lines(text) == ["ein Satz\u2028mit Trenner", "zwei\u2029drei", "vier\u0085"]
    assert text_lines("") == [] and text_lines("a\n\nb") == ["a", "", "b"]
    (tmp_path / "t.txt").write_bytes(text.encode("utf-8"))
    assert text_lines(text) == read_lines(tmp_path / "t.txt")  # extraction and reading agree


def test_iwslt14_unknown_split_fails_before_any_download():
    from luong_lit.data.sources.registry import corpus_source

    with pytest.raises(
        DataError, match="iwslt14_deen has no split 'dev'; choose from train, valid, test"
    ):
        corpus_source("iwslt14_deen", "dev", "de")


def test_a_training_list_may_name_another_datasets_corpus():
    """``multi30k:train`` in a WMT list is Multi30k's raw training text, not a WMT corpus."""
    from luong_lit.data.sources.registry import corpus_source

    for lang in ("en", "de"):
        other = corpus_source("wmt14_ende", "multi30k:train", lang, "raw")
        assert other == corpus_source("multi30k", "train", lang, "raw")
        assert other.path == f"multi30k/raw/train.{lang}.gz"
    with pytest.raises(DataError, match="corpus multi30k30:train names no dataset"):
        corpus_source("wmt14_ende", "multi30k30:train", "en", "raw")
    with pytest.raises(DataError, match="multi30k has no split 'dev'"):
        corpus_source("wmt14_ende", "multi30k:dev", "en", "raw")


# ---------------------------------------------------------------- the corpus registry
def test_every_named_corpus_has_two_distinct_fully_formatted_sides():
    """For every dataset, split and direction: two local paths, two archive members (or two
    downloads), and no unformatted ``{placeholder}`` anywhere."""
    from luong_lit.data.sources.registry import corpus_source, registry

    entries = registry()
    assert {d for d, _, _ in entries} == {"multi30k", "wmt14_ende", "iwslt14_deen"}
    assert {"europarl_v7", "commoncrawl", "news_commentary_v9"} <= {s for _, s, _ in entries}
    for dataset, split, variant in entries:
        for src_lang, tgt_lang in (("en", "de"), ("de", "en")):
            a, b = (corpus_source(dataset, split, lang, variant) for lang in (src_lang, tgt_lang))
            where = f"{dataset}/{split}/{variant} {src_lang}->{tgt_lang}"
            assert a.path != b.path, where
            assert (a.member, a.remote.url) != (b.member, b.remote.url), where
            for src, lang in ((a, src_lang), (b, tgt_lang)):
                for text in (src.path, src.member or "", src.remote.url):
                    assert "{" not in text and "}" not in text, f"{where}: {text}"
                name = src.path.rsplit("/", 1)[-1]  # OpenNMT's files say src / tgt
                side = {"en": "src-", "de": "tgt-"}[lang]
                assert lang in name.split(".") or name.startswith(side), f"{where}: {src.path}"


def test_wmt14_training_files_are_named_as_released():
    from luong_lit.data.sources.registry import corpus_source

    src = corpus_source("wmt14_ende", "europarl_v7", "de")
    assert src.path == "wmt14/train/europarl_v7/europarl-v7.de-en.de.gz"
    assert src.member == "training/europarl-v7.de-en.de" and src.lines == 1920209
    assert (
        corpus_source("wmt14_ende", "commoncrawl", "en").path
        == "wmt14/train/commoncrawl/commoncrawl.de-en.en.gz"
    )
    with pytest.raises(DataError, match="wmt14_ende has no language 'fr'"):
        corpus_source("wmt14_ende", "europarl_v7", "fr")


def test_wmt14_training_corpus_downloads_both_sides_from_a_local_server(tmp_path, monkeypatch):
    from luong_lit.data.sources import registry as corpora
    from luong_lit.data.sources.registry import corpus_source

    monkeypatch.setenv("LUONG_LIT_CACHE", str(tmp_path / "cache"))
    sha, text = _official_like_archive(tmp_path)
    server, seen = _serve(tmp_path / "www")
    try:
        url = f"http://127.0.0.1:{server.server_port}/europarl.tgz"
        monkeypatch.setitem(
            corpora._WMT_TRAIN, "europarl_v7", (url, sha, "training/europarl-v7.de-en.{lang}", 3)
        )
        en, de = (
            resolve(corpus_source("wmt14_ende", "europarl_v7", lang)) for lang in ("en", "de")
        )
        assert en != de
        assert read_lines(en) == text["en"] and read_lines(de) == text["de"]
        assert len(seen) == 1  # one download serves both sides
        again = [resolve(corpus_source("wmt14_ende", "europarl_v7", lang)) for lang in ("en", "de")]
        assert again == [en, de] and len(seen) == 1  # the cache, not the server
    finally:
        server.shutdown()


def test_a_damaged_extraction_or_short_mirror_file_is_detected(tmp_path, monkeypatch):
    from luong_lit.data.sources import registry as corpora
    from luong_lit.data.sources.registry import corpus_source

    monkeypatch.setenv("LUONG_LIT_CACHE", str(tmp_path / "cache"))
    sha, _ = _official_like_archive(tmp_path)
    url = (tmp_path / "www" / "europarl.tgz").as_uri()
    monkeypatch.setitem(
        corpora._WMT_TRAIN, "europarl_v7", (url, sha, "training/europarl-v7.de-en.{lang}", 3)
    )
    path = resolve(corpus_source("wmt14_ende", "europarl_v7", "de"))
    with gzip.open(path, "wt", encoding="utf-8") as fh:  # truncated after extraction
        fh.write("Wiederaufnahme der Sitzungsperiode\n")
    with pytest.raises(DataError, match=r"europarl-v7\.de-en\.de\.gz: checksum mismatch"):
        resolve(corpus_source("wmt14_ende", "europarl_v7", "de"))
    monkeypatch.setitem(
        corpora._WMT_TRAIN, "europarl_v7", (url, sha, "training/europarl-v7.de-en.{lang}", 5)
    )
    with pytest.raises(DataError, match="has 3 lines, but the official release has 5"):
        resolve(corpus_source("wmt14_ende", "europarl_v7", "en"))  # a wrong extraction
    mirror = tmp_path / "mirror" / "wmt14" / "train" / "europarl_v7"
    mirror.mkdir(parents=True)
    with gzip.open(mirror / "europarl-v7.de-en.en.gz", "wt", encoding="utf-8") as fh:
        fh.write("one\ntwo\n")
    with pytest.raises(DataError, match="2 lines, but the official release has 5"):
        resolve(corpus_source("wmt14_ende", "europarl_v7", "en"), tmp_path / "mirror")


# ---------------------------------------------------------------- corpora released tokenised
@needs_mirror
@pytest.mark.parametrize("lang", ["en", "de"])
def test_tokenised_text_restored_to_plain_text_tokenises_as_the_raw_text(lang):
    """Europarl lines tokenised the Stanford way (``-a``, XML escapes) and restored to plain
    text give the same tokens as the raw lines, under the kit's Moses settings."""
    from luong_lit.data.text.tokenize import PlainText

    path = DATA_MIRROR / f"wmt14/train/europarl_v7_head20k/europarl-v7.de-en.head20k.{lang}.gz"
    raw = read_lines(path)[:200]
    stanford, ours, plain = MosesTokenizer(lang, True, True), MosesTokenizer(lang), PlainText(lang)
    tokenised = [" ".join(stanford.tokenize(line)) for line in raw]
    assert sum("##AT##-##AT##" in t or "&apos;" in t for t in tokenised) >= 10  # the test bites
    for line, tok in zip(raw, tokenised, strict=True):
        assert ours.tokenize(plain(tok)) == ours.tokenize(line), tok


@needs_mirror
def test_a_corpus_released_tokenised_reaches_training_as_plain_text(monkeypatch, tmp_path):
    """The WMT samples released only tokenised resolve to a plain-text copy in the cache:
    checked against the release's checksum, both sides of equal length, no escapes or
    split-hyphen markers left, built once and rebuilt when its origin changes."""
    from luong_lit.data.sources.registry import corpus_source

    monkeypatch.setenv("LUONG_LIT_CACHE", str(tmp_path))
    for name, marker in (("opennmt_toy_ende", "&apos;"), ("nmt_hybrid_train10k", "##AT##")):
        sides = {lang: corpus_source("wmt14_ende", name, lang) for lang in ("en", "de")}
        paths = {lang: resolve(src, DATA_MIRROR) for lang, src in sides.items()}
        assert all(str(p).startswith(str(tmp_path)) for p in paths.values())
        released = read_lines(DATA_MIRROR / sides["en"].path)
        plain = {lang: read_lines(p) for lang, p in paths.items()}
        assert len(plain["en"]) == len(plain["de"]) == len(released) == 10000
        assert sum(marker.lower() in line.lower() for line in released) > 0
        assert not any(marker.lower() in line.lower() for line in plain["en"])
    stamp = paths["en"].stat().st_mtime_ns
    assert resolve(sides["en"], DATA_MIRROR) == paths["en"]
    assert paths["en"].stat().st_mtime_ns == stamp  # not rebuilt
    paths["en"].with_name(paths["en"].name + ".from").write_text("another text\n")
    assert read_lines(resolve(sides["en"], DATA_MIRROR)) == plain["en"]
    assert paths["en"].stat().st_mtime_ns != stamp
