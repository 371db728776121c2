"""``luong_lit.data.store``: a training corpus prepared once into a store: its content, its
fingerprint, concurrent and killed preparations, damage named."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from conftest import DATA_MIRROR, REPO, needs_mirror, write_corpus

from luong_lit.data import DataError
from luong_lit.data.store.prepare import ensure_store
from luong_lit.data.store.spec import CorpusSpec, store_root
from luong_lit.data.store.token_store import TokenStore


def spec_of(corpus: dict[str, str], **kw) -> CorpusSpec:
    base = {"src_lang": "src", "tgt_lang": "tgt", "vocab_size": None, "min_freq": 1, "max_len": 50}
    return CorpusSpec(files=((corpus["src"], corpus["tgt"]),), **{**base, **kw})


def _script(body: str) -> str:
    return f"import os, sys\nsys.path.insert(0, {str(REPO / 'tests')!r})\n" + textwrap.dedent(body)


def _gz(path: Path, lines: list[str]) -> None:
    import gzip

    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        fh.write("".join(x + "\n" for x in lines))


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


def test_a_killed_preparation_leaves_no_store_a_later_run_would_use(tmp_path, cache):
    corpus = write_corpus(tmp_path, "train", 50, 4)
    kill = _script(f"""
        import signal
        from luong_lit.data.store import prepare
        from test_data_store import spec_of
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
        from test_data_store import spec_of
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
@pytest.mark.xdist_group("ranks")
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


@needs_mirror
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
            (mirror / rel).symlink_to(DATA_MIRROR / rel)
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
