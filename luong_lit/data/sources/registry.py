"""The public corpora the kit knows by name, with official URLs and checksums.

Each is registered as any corpus is (:func:`~luong_lit.data.sources.named.register_corpus`):
``corpus_source(dataset, split, lang, ...)`` returns the :class:`Source` of one side of one
split, and :func:`registry` lists every ``(dataset, split, variant)`` there is. Checksums of
single-file downloads are the SHA-256 of the file; archive checksums are the values their
distributors' tooling publishes (TensorFlow Datasets' URL checksums for the WMT training
archives, sacreBLEU's MD5s for the WMT test archives). The text inside the WMT training
archives has no published checksum; its published line counts are checked instead, and the
SHA-256 of the text is recorded when it is extracted from the verified archive.
"""

from __future__ import annotations

from pathlib import Path

from luong_lit.data.io import DataError
from luong_lit.data.sources.fetch import Remote, Source
from luong_lit.data.sources.named import (  # noqa: F401 - the corpora's API, read from here too
    cased_target_file,
    corpus_source,
    dataset_names,
    register_corpus,
    registry,
)

M30K = "https://raw.githubusercontent.com/multi30k/dataset/a3d2e0d26b56f3846f66a952536ffed4e401d05a/data/task1"
# (file sha256, text sha256) of each Multi30k task-1 file
_M30K_RAW = {
    "train.de": (
        "726e39b2fa9eb9ffb6dc763fb35a179f80fae06ffc5d28b6ace5faa883de28a6",
        "2c2b73fd2b548fbcde3a875e0a78d6ee94d498bfdee6bd3eae3945779e9ddf72",
    ),
    "train.en": (
        "d79cfa999dd4c51d2cb42499b6796d5a882c3a8a961923c25a898c90f8bbd56f",
        "460a15fbd157e34a7a9957ee388c1ca247fe47af3ef25fb50442af6c274e0fc6",
    ),
    "val.de": (
        "f0cba2f995189cf5770f29a8a9a537a3ad3f51657ad873405082ff6863a5e75a",
        "660e09eb7e1da2f856ea13ee5ad3cf6d36b3d5b0b733c857e94c5747a3dfc660",
    ),
    "val.en": (
        "14f7d25ddd868909a9213e361768460edcacdd6ab9d1e77b92560dc10c10dc28",
        "1f2a23d992769b5b3d209b0a10dd0b77c08cceb1f20dfb97ed0aafa49d107227",
    ),
    "test_2016_flickr.de": (
        "9204244e408ccb38d2a55cfcd344df15005fc42a07a6e55ca6c52b6ababb8cc8",
        "4be6b5b3236b79c25475c6bb829800a7ce559e9ba7a1f6c2394fe4d40be46d16",
    ),
    "test_2016_flickr.en": (
        "611d361c6334bc7246101d48097c13cf5c4413c5befc793cc629934359d532d9",
        "399a4382932c1aadd3ceb9bef1008d388a64c76d4ae4e9d4728c6f4301cac182",
    ),
}
_M30K_TOK = {  # text sha256 (the upstream files are plain text)
    "train.de": "cb5a23529b65ec2061f1dc446192a9c37382b63cc75f81a0be59d34894b3a505",
    "train.en": "08925f8e0572bcd5a006702fc5fe20e2d77c6917d4eebd576fc20de6693c2119",
    "val.de": "97232bd273eceb7207f689527386a97e4be2616b18ada47576bdaf96c8ae1f00",
    "val.en": "46573ce391ae227f1c72f873392436a20ef18e0a6d518098cfbd70b77c8572ec",
    "test_2016_flickr.de": "c6a33d39d48f9f510de147651316cd9d918e09ad0219df734a2f16b6baccacc4",
    "test_2016_flickr.en": "5b7f32627cf99eced828311b955dae9800bb52bc8b91cf8b6526829e605b29d2",
}

_STATMT = "http://www.statmt.org"
_WMT_TRAIN = {  # name: (url, sha256, member template with {lang}, lines per side)
    "europarl_v7": (
        f"{_STATMT}/wmt13/training-parallel-europarl-v7.tgz",
        "0224c7c710c8a063dfd893b0cc0830202d61f4c75c17eb8e31836103d27d96e7",
        "training/europarl-v7.de-en.{lang}",
        1920209,
    ),
    "commoncrawl": (
        f"{_STATMT}/wmt13/training-parallel-commoncrawl.tgz",
        "c7a74e2ea01ac6c920123108627e35278d4ccb5701e15428ffa34de86fa3a9e5",
        "commoncrawl.de-en.{lang}",
        2399123,
    ),
    "news_commentary_v9": (
        f"{_STATMT}/wmt14/training-parallel-nc-v9.tgz",
        "cb8953f292298e6877ae433c98912b927cb0766b303f4540512ddd286c748485",
        "training/news-commentary-v9.de-en.{lang}",
        201288,
    ),
}
_WMT_TEST = {  # name: (url, md5, {lang: member})
    "newstest2013": (
        "http://statmt.org/wmt14/dev.tgz",
        "88ba3fc60b2278d59277122e1c7dd6e7",
        {"en": "dev/newstest2013-src.en.sgm", "de": "dev/newstest2013-ref.de.sgm"},
    ),
    "newstest2014": (
        "http://statmt.org/wmt14/test-full.tgz",
        "a8cd784e006feb32ac6f3d9ec7eb389a",
        {
            "en": "test-full/newstest2014-deen-src.en.sgm",
            "de": "test-full/newstest2014-deen-ref.de.sgm",
        },
    ),
    "newstest2014.filtered2737": (
        "http://statmt.org/wmt14/test-filtered.tgz",
        "84c597844c1542e29c2aff23aaee4310",
        {"en": "test/newstest2014-deen-src.en.sgm", "de": "test/newstest2014-deen-ref.de.sgm"},
    ),
    "newstest2015": (
        "http://statmt.org/wmt15/test.tgz",
        "67e3beca15e69fe3d36de149da0a96df",
        {"en": "test/newstest2015-ende-src.en.sgm", "de": "test/newstest2015-ende-ref.de.sgm"},
    ),
}
_EUROPARL_HEAD20K = {
    "de": "c40e45eeb5b92156422a9c9781bafdab1dbbb525b09c0f410ad21943d205cafb",
    "en": "4fc27e152d74d7c587b9dca8aa785da898f5995a3432155245aa064cc1862969",
}
_GH = "https://raw.githubusercontent.com"
_ONMT = f"{_GH}/OpenNMT/OpenNMT-py/3518fbab3092b21f12d78f9054097dffabb4025e/data"
_HYBRID = f"{_GH}/lmthang/nmt.hybrid/8e77d63402c8a4f448cefb7caca6efeab2e2e0bc/data"
# WMT training samples released only Moses-tokenised (10k pairs each): OpenNMT's toy-ende and
# the paper's authors' sample in their Stanford preprocessing. {lang: (path, url, text sha256)}
_WMT_TOKENISED = {
    "opennmt_toy_ende": {
        "en": (
            "wmt14/tok/opennmt_toy_ende/src-train.txt.gz",
            f"{_ONMT}/src-train.txt",
            "db668a7d798bddf21d1ab8fcb403efbc724ba01b70472ad30d1e2049fd46e12b",
        ),
        "de": (
            "wmt14/tok/opennmt_toy_ende/tgt-train.txt.gz",
            f"{_ONMT}/tgt-train.txt",
            "fe1f824a189baa650eec46269e66eef07f7304ba7572598ebbe61c55eeff7d01",
        ),
    },
    "nmt_hybrid_train10k": {
        "en": (
            "wmt14/tok/luong_nmt_hybrid/train.10k.en.gz",
            f"{_HYBRID}/train.10k.en",
            "39bbdef93fa2c4c7f746936e61f8ca9fab9ae124ed76b871ab0a4415d54dd626",
        ),
        "de": (
            "wmt14/tok/luong_nmt_hybrid/train.10k.de.gz",
            f"{_HYBRID}/train.10k.de",
            "17fea633e1484af5a1dc11a310efff03107bd5b9478d00d8ace833cfe899bfd6",
        ),
    },
}
_IWSLT_SPLITS = ("train", "valid", "test", "train.sample9999")  # the last: local mirrors only
# The WIT3 archive that fairseq's prepare-iwslt14.sh was written for (wit3.fbk.eu/archive/2014-01)
# is no longer served; fairseq keeps the identical release here, and its script now reads it.
_IWSLT = Remote(
    "http://dl.fbaipublicfiles.com/fairseq/data/iwslt14/de-en.tgz",
    "md5:10936dfdf616504ddbd844e91b94ef4a",
)

_WMT_LANGS = ("en", "de")
_M30K_SPLITS = ("train", "val", "test_2016_flickr")


def multi30k(split: str, lang: str, variant: str = "tok") -> Source:
    key = f"{split}.{lang}"
    if key not in _M30K_RAW or split not in _M30K_SPLITS:
        raise DataError(
            f"multi30k has no split {split!r} for language {lang!r}; "
            "splits: train, val, test_2016_flickr"
        )
    if variant == "raw":
        sha, text_sha = _M30K_RAW[key]
        return Source(
            f"multi30k/raw/{key}.gz",
            Remote(f"{M30K}/raw/{key}.gz", f"sha256:{sha}"),
            fmt="gz",
            content_sha256=text_sha,
        )
    if variant == "tok":
        name = f"{split}.lc.norm.tok.{lang}"
        sha = _M30K_TOK[key]
        return Source(
            f"multi30k/tok/{name}.gz",
            Remote(f"{M30K}/tok/{name}", f"sha256:{sha}"),
            content_sha256=sha,
        )
    raise DataError(f"multi30k variant must be 'raw' or 'tok', got {variant!r}")


def wmt14(split: str, lang: str, variant: str = "raw") -> Source:
    """A WMT'14 training corpus (``europarl_v7``...), a sample of one (``europarl_v7_head20k``,
    ``opennmt_toy_ende``, ``nmt_hybrid_train10k``) or a test set (``newstest2014``...), in its
    one variant: the text as released."""
    if lang not in _WMT_LANGS:
        raise DataError(f"wmt14_ende has no language {lang!r}; choose from {', '.join(_WMT_LANGS)}")
    if split == "europarl_v7_head20k":  # the first 20k lines of Europarl v7
        url, sha, member, _ = _WMT_TRAIN["europarl_v7"]
        return Source(
            f"wmt14/train/europarl_v7_head20k/europarl-v7.de-en.head20k.{lang}.gz",
            Remote(url, f"sha256:{sha}"),
            member.format(lang=lang),
            content_sha256=_EUROPARL_HEAD20K[lang],
            head=20000,
        )
    if split in _WMT_TOKENISED:
        path, url, sha = _WMT_TOKENISED[split][lang]
        return Source(
            path, Remote(url, f"sha256:{sha}"), content_sha256=sha, lines=10000, tokenised=lang
        )
    if split in _WMT_TRAIN:
        url, sha, template, lines = _WMT_TRAIN[split]
        member = template.format(lang=lang)  # formatted first: each side has its own file
        return Source(
            f"wmt14/train/{split}/{member.rsplit('/', 1)[-1]}.gz",
            Remote(url, f"sha256:{sha}"),
            member,
            lines=lines,
        )
    if split in _WMT_TEST:
        url, md5, members = _WMT_TEST[split]
        return Source(
            f"wmt14/raw/{split}.{lang}.gz", Remote(url, f"md5:{md5}"), members[lang], fmt="sgm"
        )
    names = sorted([*_WMT_TRAIN, *_WMT_TOKENISED, *_WMT_TEST, "europarl_v7_head20k"])
    raise DataError(f"wmt14_ende has no corpus {split!r}; choose from {names}")


def _prepare_iwslt(archive: Path) -> dict[str, list[str]]:
    """The six prepared texts of IWSLT'14's archive (:func:`.iwslt.prepare`)."""
    from luong_lit.data.sources import iwslt

    return iwslt.prepare(archive)


def iwslt14(split: str, lang: str, variant: str = "tok") -> Source:
    """IWSLT'14 De-En TED talks, lowercased and Moses-tokenised (``train``, ``valid``, ``test``),
    its one variant."""
    if split not in _IWSLT_SPLITS:
        raise DataError(
            f"iwslt14_deen has no split {split!r}; choose from {', '.join(_IWSLT_SPLITS)}"
        )
    if lang not in _WMT_LANGS:
        raise DataError(f"iwslt14_deen has no language {lang!r}; choose from de, en")
    path = f"iwslt14/tok/{split}.{lang}.gz"
    return Source(path, _IWSLT, member=f"{split}.{lang}", prepare=_prepare_iwslt)


register_corpus(
    "multi30k", multi30k, label="Multi30k", splits=_M30K_SPLITS, variants=("tok", "raw"),
    cased=lambda split, lang: multi30k(split, lang, "raw"),
)  # fmt: skip
register_corpus(
    "wmt14_ende", wmt14, label="WMT'14", variants=("raw",),
    splits=(*_WMT_TRAIN, "europarl_v7_head20k", *_WMT_TOKENISED, *_WMT_TEST),
)  # fmt: skip
register_corpus("iwslt14_deen", iwslt14, label="IWSLT'14", splits=_IWSLT_SPLITS)
