"""``luong_lit.data`` shared by its rooms: reading parallel files (errors named by file and line)
and vocabularies."""

from __future__ import annotations

import gzip

import pytest

from luong_lit.data import (
    DataError,
    Vocab,
    read_lines,
    read_parallel,
)


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


def test_vocab_top_k_and_min_freq():
    sents = [["a", "b", "b", "c", "c", "c"], ["d"]]
    assert Vocab.build(sents, max_size=2).itos[4:] == ["c", "b"]
    assert Vocab.build(sents, min_freq=2).itos[4:] == ["c", "b"]
    v = Vocab.build(sents)
    assert v.itos[:4] == ["<pad>", "<unk>", "<s>", "</s>"]
    assert v.decode(v.encode(["c", "zzz"]) + [3, 5]) == ["c", "<unk>"]
