"""``luong_lit.data.loading``: length filters, batches and their sampler, and the datamodule."""

from __future__ import annotations

import random

import pytest
from conftest import DATA_MIRROR, needs_mirror

from luong_lit.data import (
    BucketBatchSampler,
    TranslationDataModule,
    Vocab,
    collate,
)
from luong_lit.data.store.chunks import length_filter


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
    if by == "sentences":
        chunk = chunk_batches * batch_size
    else:  # token batches sort within 100 batches or more (sentences of similar length)
        chunk = max(chunk_batches, 100) * max(1, batch_size // 20)
    out = []
    for start in range(0, len(order), chunk):
        out += naive_cut(sorted(order[start : start + chunk], key=key), tgt_lens, batch_size, by)
    rng.shuffle(out)
    return out


def test_length_filter_and_truncate():
    src = [["x"] * 3, ["x"] * 60, [], ["x"] * 10]
    tgt = [["y"] * 3, ["y"] * 5, ["y"], ["y"] * 55]
    s, t = length_filter(src, tgt, max_len=50, mode="filter")
    assert [len(x) for x in s] == [3]  # empty and overlong pairs dropped (paper §4.1)
    s, t = length_filter(src, tgt, max_len=50, mode="truncate")
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


@pytest.mark.parametrize("chunk_batches", [1, 3, 100])
@pytest.mark.parametrize("by,size", [("sentences", 16), ("tokens", 60)])
def test_sampler_equals_the_naive_sort_it_replaces(chunk_batches, by, size):
    g = random.Random(0)
    src, tgt = [g.randint(1, 9) for _ in range(503)], [g.randint(1, 9) for _ in range(503)]
    sampler = BucketBatchSampler(src, tgt, size, batch_by=by, chunk_batches=chunk_batches, seed=7)
    for epoch in (0, 3):
        sampler.set_epoch(epoch)
        want = naive_batches(src, tgt, size, chunk_batches, 7, epoch, by)
        assert [b.tolist() for b in sampler] == want
    evaluation = BucketBatchSampler(src, tgt, 16, shuffle=False)
    flat = [i for b in evaluation for i in b.tolist()]
    assert flat == sorted(range(503), key=lambda i: (tgt[i], src[i]))


@needs_mirror
def test_store_gives_the_in_memory_batches_id_for_id_on_multi30k(cache):
    dm = TranslationDataModule(
        dataset="multi30k",
        min_freq=2,
        vocab_size=None,
        batch_size=64,
        chunk_batches=1,
        mirror=str(DATA_MIRROR),
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
            seed=dm.batching.seed,
        )
        sampler.set_epoch(epoch)
        loader = dm.train_dataloader()
        loader.batch_sampler.set_epoch(epoch)
        for n, (ours, idx) in enumerate(zip(loader, sampler)):
            ref = collate([examples[i] for i in idx])
            for name in ("src", "src_len", "tgt_in", "tgt_out", "index"):
                assert getattr(ours, name).equal(getattr(ref, name)), (epoch, n, name)
        assert n + 1 == len(loader) == 454


def test_collate_counts_the_target_tokens_on_the_host_and_every_copy_keeps_the_count():
    """The throughput callback reads a batch's token count at every step: a count made on the
    host by ``collate``, never a value read back from the device (here: one with no values)."""
    import torch

    from luong_lit.data.loading.batching import Batch
    from luong_lit.data.loading.buckets import pad_batch
    from luong_lit.training.callbacks import ThroughputMonitor

    batch = collate([(0, [4, 5], [6, 7, 8]), (1, [4], [6]), (2, [5, 4], [])])
    assert batch.tgt_tokens == int((batch.tgt_out != 0).sum()) == 7
    assert batch.to("cpu").tgt_tokens == pad_batch(batch, 4, 5, 6).tgt_tokens == 7
    assert Batch(*batch.tensors()).num_tgt_tokens == 7  # a batch made otherwise: counted
    monitor = ThroughputMonitor(every_n_steps=100)
    monitor.on_train_epoch_start(None, None)
    monitor.on_train_batch_end(None, None, None, batch.to("meta"), 0)
    assert monitor._tokens == 7
    if torch.cuda.is_available():
        assert batch.pin_memory().src.is_pinned() and batch.pin_memory().tgt_tokens == 7


def test_a_gpu_run_loads_with_workers_and_pinned_memory_and_a_cpu_run_as_before(
    toy_corpus, tmp_path
):
    from types import SimpleNamespace

    import torch
    from conftest import compose_cfg, tiny_overrides

    from luong_lit.data.loading.workers import GPU_WORKERS
    from luong_lit.training.instantiate import instantiate_at

    def loader(device: str, *extra: str):
        cfg = compose_cfg(tiny_overrides(toy_corpus) + list(extra), tmp_path)
        dm = instantiate_at("data", cfg.data)
        dm.setup("fit")
        strategy = SimpleNamespace(root_device=torch.device(device))
        dm.trainer = SimpleNamespace(
            strategy=strategy, world_size=1, current_epoch=0, limit_train_batches=1.0
        )
        return dm.val_dataloader(), dm.train_dataloader()

    def how(made) -> tuple:
        return made.num_workers, made.pin_memory, made.persistent_workers

    assert [how(x) for x in loader("cpu")] == [(0, False, False)] * 2  # no workers, no pinning
    assert [how(x) for x in loader("cuda")] == [(GPU_WORKERS, True, True)] * 2
    assert [how(x) for x in loader("cuda", "data.num_workers=0")] == [(0, True, False)] * 2


def _dev_batches(cfg) -> list[list[int]]:
    """The dev loader's batches (their source tokens), read by its worker processes."""
    from luong_lit.training.instantiate import instantiate_at

    dm = instantiate_at("data", cfg.data)
    dm.setup("fit")
    return [batch.src.flatten().tolist() for batch in dm.val_dataloader()]


def test_loader_workers_start_inside_a_joblib_sweep_job(toy_corpus, tmp_path):
    """A joblib sweep runs each job in a loky process, whose default start method is loky's:
    a DataLoader that took the default could not start its workers there."""
    import joblib
    from conftest import compose_cfg, tiny_overrides

    cfg = compose_cfg(tiny_overrides(toy_corpus) + ["data.num_workers=1"], tmp_path)
    here = _dev_batches(cfg)
    [there] = joblib.Parallel(n_jobs=2, backend="loky")([joblib.delayed(_dev_batches)(cfg)])
    assert there == here and len(here) > 0
