"""IWSLT'14 De-En preparation, following fairseq's ``prepare-iwslt14.sh``.

Train: ``train.tags.de-en.{de,en}`` without metadata lines, Moses-tokenised, pairs of 1–175
tokens with a length ratio ≤ 1.5 kept, lowercased; every 23rd pair becomes ``valid``.
Test: the ``<seg>`` lines of dev2010, TEDX.dev2012, tst2010, tst2011 and tst2012.
"""

from __future__ import annotations

import functools
import re
import tarfile
from pathlib import Path

from luong_lit.data.io import text_lines
from luong_lit.data.text.tokenize import MosesTokenizer

_META = ("<url>", "<talkid>", "<keywords>", "<speaker>", "<reviewer>", "<translator>")
_TAGS = re.compile(r"</?(title|description)>")
_SEG = re.compile(r"<seg[^>]*>\s*(.*?)\s*</seg>")
_TEST_SETS = ("TED.dev2010", "TEDX.dev2012", "TED.tst2010", "TED.tst2011", "TED.tst2012")


def _read(tar: tarfile.TarFile, name: str) -> list[str]:
    return text_lines(tar.extractfile(f"de-en/{name}").read().decode("utf-8"))  # type: ignore[union-attr]


@functools.lru_cache(maxsize=1)
def prepare(archive: Path) -> dict[str, list[str]]:
    """All six prepared files, keyed ``'{split}.{lang}'`` (kept, as each file asks for all six)."""
    tok = {lang: MosesTokenizer(lang, escape=True) for lang in ("de", "en")}
    out: dict[str, list[str]] = {}
    with tarfile.open(archive) as tar:
        train = {}
        for lang in ("de", "en"):
            lines = [
                ln
                for ln in _read(tar, f"train.tags.de-en.{lang}")
                if not any(m in ln for m in _META)
            ]
            train[lang] = [tok[lang].tokenize(_TAGS.sub("", ln).strip()) for ln in lines]
        pairs = [
            (d, e)
            for d, e in zip(train["de"], train["en"])
            if 1 <= len(d) <= 175
            and 1 <= len(e) <= 175
            and max(len(d) / len(e), len(e) / len(d)) <= 1.5
        ]
        for lang, col in (("de", 0), ("en", 1)):
            lines = [" ".join(p[col]).lower() for p in pairs]
            out[f"valid.{lang}"] = [ln for i, ln in enumerate(lines, 1) if i % 23 == 0]
            out[f"train.{lang}"] = [ln for i, ln in enumerate(lines, 1) if i % 23 != 0]
            test = []
            for name in _TEST_SETS:
                for ln in _read(tar, f"IWSLT14.{name}.de-en.{lang}.xml"):
                    m = _SEG.search(ln)
                    if m:
                        test.append(" ".join(tok[lang].tokenize(m.group(1))).lower())
            out[f"test.{lang}"] = test
    return out
