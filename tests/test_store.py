"""The prepared corpus store: the same batches as the in-memory path, keyed by a fingerprint,
built once and atomically, shared by processes, and refusing damage with a clear message."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from conftest import SHARED_DATA, write_corpus

from luong_lit.data import BucketBatchSampler, DataError, TranslationDataModule, Vocab, collate
from luong_lit.data.store.prepare import ensure_store
from luong_lit.data.store.spec import CorpusSpec, store_root
from luong_lit.data.store.token_store import TokenStore

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture()
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("LUONG_LIT_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def spec_of(corpus: dict[str, str], **kw) -> CorpusSpec:
    base = {"src_lang": "src", "tgt_lang": "tgt", "vocab_size": None, "min_freq": 1, "max_len": 50}
    return CorpusSpec(files=((corpus["src"], corpus["tgt"]),), **{**base, **kw})


def naive_cut(part, tgt_lens, batch_size, by):
    if by == "sentences":
        return [part[i : i + batch_size] for i in range(0, len(part), batch_size)]
    batches, cur = [], []
    for i in part:  # grow the batch while its padded target tokens fit the budget
        if cur and max(tgt_lens[j] + 1 for j in [*cur, i]) * (len(cur) + 1) > batch_size:
            batches.append(cur)
            cur = []
        cur.append(i)
    return batches + ([cur] if cur else [])


def naive_batches(src_lens, tgt_lens, batch_size, chunk_batches, seed, epoch, by="sentences"):
    """The batch order as first written: Python's sorted() within shuffled chunks."""
    rng = random.Random(seed + epoch)
    order = list(range(len(tgt_lens)))
    rng.shuffle(order)
    key = lambda i: (tgt_lens[i], src_lens[i])  # noqa: E731
    chunk = chunk_batches * (batch_size if by == "sentences" else max(1, batch_size // 20))
    out = []
    for start in range(0, len(order), chunk):
        out += naive_cut(sorted(order[start : start + chunk], key=key), tgt_lens, batch_size, by)
    rng.shuffle(out)
    return out


@pytest.mark.parametrize("chunk_batches", [1, 3, 100])
@pytest.mark.parametrize("by,size", [("sentences", 16), ("tokens", 60)])
def test_sampler_equals_the_naive_sort_it_replaces(chunk_batches, by, size):
    g = random.Random(0)
    src, tgt = [g.randint(1, 9) for _ in range(503)], [g.randint(1, 9) for _ in range(503)]
    sampler = BucketBatchSampler(src, tgt, size, by, chunk_batches=chunk_batches, seed=7)
    for epoch in (0, 3):
        sampler.set_epoch(epoch)
        want = naive_batches(src, tgt, size, chunk_batches, 7, epoch, by)
        assert [b.tolist() for b in sampler] == want
    evaluation = BucketBatchSampler(src, tgt, 16, shuffle=False)
    flat = [i for b in evaluation for i in b.tolist()]
    assert flat == sorted(range(503), key=lambda i: (tgt[i], src[i]))


@pytest.mark.skipif(not SHARED_DATA.is_dir(), reason="needs the local data mirror")
def test_store_gives_the_in_memory_batches_id_for_id_on_multi30k(cache):
    dm = TranslationDataModule(
        "multi30k",
        min_freq=2,
        vocab_size=None,
        batch_size=64,
        chunk_batches=1,
        mirror=str(SHARED_DATA),
    )
    dm.setup()
    memory = dm.read_train_split()
    assert Vocab.build(memory.src_tokens, None, 2) == dm.src_vocab
    assert Vocab.build(memory.tgt_tokens, None, 2) == dm.tgt_vocab
    examples = memory.examples()
    assert len(examples) == len(dm.train_store) == 29000
    for epoch in (0, 1):
        sampler = BucketBatchSampler(
            [len(e[1]) for e in examples],
            [len(e[2]) for e in examples],
            64,
            chunk_batches=1,
            seed=dm.seed,
        )
        sampler.set_epoch(epoch)
        loader = dm.train_dataloader()
        loader.batch_sampler.set_epoch(epoch)
        for n, (ours, idx) in enumerate(zip(loader, sampler)):
            ref = collate([examples[i] for i in idx])
            for name in ("src", "src_len", "tgt_in", "tgt_out", "index"):
                assert getattr(ours, name).equal(getattr(ref, name)), (epoch, n, name)
        assert n + 1 == len(loader) == 454


def test_fingerprint_changes_with_every_input_and_option_and_nothing_else(tmp_path, cache):
    a = write_corpus(tmp_path / "a", "train", 30, 1)
    base = spec_of(a)
    base_fp = base.fingerprint()
    same_text = tmp_path / "copy"
    same_text.mkdir()
    copy = {k: str(same_text / Path(v).name) for k, v in a.items()}
    for k in a:
        Path(copy[k]).write_bytes(Path(a[k]).read_bytes())
    assert spec_of(copy).fingerprint() == base_fp  # the content counts, not the path
    variants = [
        spec_of(write_corpus(tmp_path / "b", "train", 30, 2)),
        spec_of(a, src_lang="tgt", tgt_lang="src"),
        spec_of(a, tokenizer="moses"),
        spec_of(a, tokenizer_opts={"lowercase": True}),
        spec_of(a, vocab_size=5),
        spec_of(a, min_freq=2),
        spec_of(a, max_len=5),
        spec_of(a, length_mode="truncate"),
        CorpusSpec(files=((a["src"], a["tgt"]),) * 2, src_lang="src", tgt_lang="tgt", max_len=50),
    ]
    prints = [v.fingerprint() for v in variants]
    assert base_fp not in prints and len(set(prints)) == len(prints)
    Path(a["tgt"]).write_text(Path(a["tgt"]).read_text() + "A B\n")  # an edited input file
    Path(a["src"]).write_text(Path(a["src"]).read_text() + "a b\n")
    assert spec_of(a).fingerprint() != base_fp


def test_store_holds_what_the_corpus_says(tmp_path, cache):
    corpus = write_corpus(tmp_path, "train", 40, 3)
    store = ensure_store(spec_of(corpus, max_len=5), workers=2)
    src = [ln.split() for ln in Path(corpus["src"]).read_text().splitlines()]
    tgt = [ln.split() for ln in Path(corpus["tgt"]).read_text().splitlines()]
    kept = [(s, t) for s, t in zip(src, tgt) if len(s) <= 5 and len(t) <= 5]
    assert len(store) == len(kept) and store.meta["stats"]["pairs_read"] == 40
    assert store.ids["src"].dtype == np.uint16
    for i, (s, t) in enumerate(kept):
        _, s_ids, t_ids = store[i]
        assert store.vocabs["src"].decode(s_ids) == s and store.vocabs["tgt"].decode(t_ids) == t
    assert ensure_store(spec_of(corpus, max_len=5)).path == store.path  # opened, not rebuilt


def _script(body: str) -> str:
    return f"import os, sys\nsys.path.insert(0, {str(REPO / 'tests')!r})\n" + textwrap.dedent(body)


def test_a_killed_preparation_leaves_no_store_a_later_run_would_use(tmp_path, cache):
    corpus = write_corpus(tmp_path, "train", 50, 4)
    kill = _script(f"""
        import signal
        from luong_lit.data.store import prepare
        from test_store import spec_of
        prepare._encode = lambda *a, **k: os.kill(os.getpid(), signal.SIGKILL)
        prepare.ensure_store(spec_of({corpus!r}), workers=1)
    """)
    res = subprocess.run(
        [sys.executable, "-c", kill], env={**os.environ}, capture_output=True, timeout=120
    )
    assert res.returncode == -9
    spec = spec_of(corpus)
    assert not (store_root() / spec.fingerprint()).exists()
    assert list(store_root().glob(f".tmp-{spec.fingerprint()}-*"))  # the half-built one, aside
    store = ensure_store(spec, workers=1)
    assert len(store) == 50 and not list(store_root().glob(".tmp-*"))


def test_two_processes_preparing_at_once_build_one_store(tmp_path, cache):
    corpus = write_corpus(tmp_path, "train", 3000, 5)
    log = tmp_path / "built.log"
    both = _script(f"""
        from luong_lit.data.store import prepare
        from test_store import spec_of
        build = prepare.build_store
        def logged(*a, **k):
            with open({str(log)!r}, "a") as fh:
                fh.write(str(os.getpid()) + "\\n")
            return build(*a, **k)
        prepare.build_store = logged
        print(prepare.ensure_store(spec_of({corpus!r}), workers=1).path)
    """)
    procs = [
        subprocess.Popen([sys.executable, "-c", both], stdout=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    paths = {p.communicate(timeout=300)[0].strip() for p in procs}
    assert all(p.returncode == 0 for p in procs)
    assert (
        len(paths) == 1 and len(log.read_text().split()) == 1
    )  # one build, one store, both open it


@pytest.mark.parametrize(
    "damage,message",
    [
        (lambda d: (d / "src.ids").write_bytes((d / "src.ids").read_bytes()[:-2]), "src.ids has"),
        (lambda d: (d / "meta.json").write_text("{"), "meta.json is unreadable"),
        (lambda d: (d / "meta.json").unlink(), "meta.json is missing"),
        (lambda d: (d / "tgt.vocab").write_text("a\n"), "tgt.vocab"),
        (
            lambda d: (d / "tgt.offsets").write_bytes(b"\0" * (d / "tgt.offsets").stat().st_size),
            "tgt.offsets",
        ),
        (
            lambda d: (d / "src.ids").write_bytes(b"\xff" * (d / "src.ids").stat().st_size),
            "beyond the vocabulary",
        ),
    ],
)
def test_a_damaged_store_is_named_with_how_to_rebuild_it(tmp_path, cache, damage, message):
    store = ensure_store(spec_of(write_corpus(tmp_path, "train", 20, 6)), workers=1)
    damage(store.path)
    with pytest.raises(DataError, match=message) as err:
        TokenStore(store.path)
    assert str(store.path) in str(err.value) and "python -m luong_lit prepare" in str(err.value)


def test_a_store_travels_to_other_processes_as_its_path(tmp_path, cache):
    import pickle

    store = ensure_store(spec_of(write_corpus(tmp_path, "train", 20, 7)), workers=1)
    data = pickle.dumps(store)
    assert len(data) < 500  # the arrays stay on disk
    again = pickle.loads(data)
    assert again[3] == store[3] and again.path == store.path


def test_prepare_meta_counts_words_before_the_filter(tmp_path, cache):
    corpus = write_corpus(tmp_path, "train", 30, 8)
    store = ensure_store(spec_of(corpus, max_len=4), workers=1)
    words = sum(len(ln.split()) for ln in Path(corpus["src"]).read_text().splitlines())
    stats = json.loads((store.path / "meta.json").read_text())["stats"]
    assert stats["words"]["src"] == words and stats["pairs"] < stats["pairs_read"] == 30


@pytest.mark.slow
def test_ddp_ranks_and_the_jobs_of_a_sweep_share_one_store(toy_corpus, tmp_path, cache):
    from conftest import compose_cfg, tiny_overrides

    from luong_lit.training.run import train

    overrides = tiny_overrides(toy_corpus) + ["trainer.max_epochs=1", "test_after_training=false"]
    train(compose_cfg([*overrides, "trainer=ddp_sim"], tmp_path / "ddp"))
    cmd = [sys.executable, "-m", "luong_lit", "train", "-m", "seed=1,2", *overrides]
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    dirs = [f"hydra.sweep.dir={tmp_path}/sweep", "hydra.sweep.subdir=${hydra.job.num}"]
    sweep = subprocess.run(
        [*cmd, *dirs], cwd=REPO, env=env, capture_output=True, text=True, timeout=600
    )
    assert sweep.returncode == 0, sweep.stderr[-2000:]
    stores = [p for p in store_root().iterdir() if p.is_dir()]
    assert (
        len(stores) == 1 and (stores[0] / "meta.json").is_file()
    )  # one store for all five processes
    assert len(list((tmp_path / "sweep").glob("*/checkpoints/last.ckpt"))) == 2


def _gz(path: Path, lines: list[str]) -> None:
    import gzip

    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        fh.write("".join(x + "\n" for x in lines))


@pytest.mark.skipif(not SHARED_DATA.is_dir(), reason="needs the local data mirror")
def test_the_paper_recipe_reads_three_corpora_with_their_checks(tmp_path, cache, monkeypatch):
    """``data=wmt14_ende``: Europarl, Common Crawl and News Commentary concatenated, Moses with
    the hyphen marks, a 50-word filter, the paper's dev and test sets; every file checked."""
    from conftest import compose_cfg

    from luong_lit.data.sources import registry as corpora

    mirror = tmp_path / "mirror"
    for name in ("europarl_v7", "commoncrawl", "news_commentary_v9"):
        url, sha, member, _ = corpora._WMT_TRAIN[name]
        monkeypatch.setitem(corpora._WMT_TRAIN, name, (url, sha, member, 3))  # tiny stand-ins
        for lang, text in (
            ("en", f"A well-known {name} fact ."),
            ("de", f"Eine bekannte {name} Tatsache ."),
        ):
            _gz(mirror / corpora.wmt14(name, lang).path, [text, f"{text} {text}", "x " * 60])
    for name in ("newstest2013", "newstest2014", "newstest2014.filtered2737", "newstest2015"):
        for lang in ("en", "de"):
            rel = corpora.wmt14(name, lang).path
            (mirror / rel).parent.mkdir(parents=True, exist_ok=True)
            (mirror / rel).symlink_to(SHARED_DATA / rel)
    import hydra

    cfg = compose_cfg(["experiment=table1_base", f"data.mirror={mirror}"], tmp_path / "run")
    dm = hydra.utils.instantiate(cfg.data)
    dm.setup()
    stats = dm.train_store.meta["stats"]
    assert stats["pairs_read"] == 9 and stats["pairs"] == 6  # the 60-word pairs are filtered out
    assert "##AT##-##AT##" in dm.src_vocab.stoi and "commoncrawl" in dm.src_vocab.stoi
    assert (
        len(dm.splits["dev"].src_ids) == 3000
        and len(dm.splits["newstest2014_filtered"].src_ids) == 2737
    )
    monkeypatch.setitem(
        corpora._WMT_TRAIN, "commoncrawl", (url, sha, corpora._WMT_TRAIN["commoncrawl"][2], 4)
    )
    with pytest.raises(
        DataError, match="commoncrawl.de-en.en.gz: 3 lines, but the official release has 4"
    ):
        hydra.utils.instantiate(cfg.data).setup()
