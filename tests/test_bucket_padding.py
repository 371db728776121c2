"""A fixed-shape run's batches padded to their buckets where they are made (the loader, in its
workers on a GPU), and every bucket they can take known before the first step (where steps
are captured, each is captured then: ``tests/test_gpu_graphs.py``)."""

from __future__ import annotations

import pytest
import torch
from conftest import compose_cfg, tiny_overrides
from lightning.pytorch import Callback

from luong_lit.data.loading.batching import collate
from luong_lit.data.loading.buckets import BucketPadding, bucket_shape, bucket_shapes, pad_batch
from luong_lit.engines import FastEngine
from luong_lit.training.build import build
from luong_lit.training.run_folder import RunFolder

BUCKETS = "engine.buckets=[4,6,7,9]"  # the toy corpus's 3-7 words fall in several


class SeenBatches(Callback):
    """Each training batch as the step receives it: its shape and its sentences."""

    def __init__(self) -> None:
        self.seen: list[tuple[tuple[int, int, int], int]] = []

    def on_train_batch_start(self, trainer, module, batch, batch_idx) -> None:
        self.seen.append(((*batch.src.shape, batch.tgt_in.size(1)), len(batch)))


def fit(toy_corpus, tmp_path, *extra: str, callbacks=()):
    overrides = ["engine.graphs=static", BUCKETS, "trainer.max_epochs=2", "data.batch_size=6",
                 "test_after_training=false", "seed=3", *extra]  # fmt: skip
    cfg = compose_cfg([*tiny_overrides(toy_corpus), *overrides], tmp_path)
    dm, module, trainer = build(cfg, RunFolder.open(cfg))
    trainer.callbacks[:0] = list(callbacks)
    trainer.fit(module, dm)
    return module


@pytest.mark.parametrize("shapes", ["square", "pair"])
def test_the_step_receives_batches_padded_to_their_buckets_and_knows_their_sentences(
    toy_corpus, tmp_path, shapes
):
    seen = SeenBatches()
    fit(toy_corpus, tmp_path, f"engine.shapes={shapes}", callbacks=[seen])
    assert len(seen.seen) == 2 * 11  # 64 pairs in batches of 6, two epochs
    rows = {shape[0] for shape, _ in seen.seen}
    assert rows == {6}  # the short last batch too
    assert sorted(n for _, n in seen.seen)[:2] == [4, 4]  # its sentences: 64 = 10 * 6 + 4
    lengths = {n for shape, _ in seen.seen for n in shape[1:]}
    assert lengths <= {4, 6, 7, 9} and len(lengths) > 1


def test_padding_where_batches_are_made_trains_the_same_weights_as_padding_in_the_step(
    toy_corpus, tmp_path, monkeypatch
):
    """The loss normalised by the batch's own sentences, not its padded rows (``loss_norm``
    sentences), and every update the same, bit for bit."""
    padded = fit(toy_corpus, tmp_path / "loader", "model.net.dropout=0.3")
    monkeypatch.setattr(FastEngine, "padding", lambda self: None)  # the step pads, as before
    in_step = fit(toy_corpus, tmp_path / "step", "model.net.dropout=0.3")
    a, b = padded.net.state_dict(), in_step.net.state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a)


@pytest.mark.parametrize("shapes", ["square", "pair"])
def test_every_bucket_training_meets_was_given_to_the_engine_before_the_first_step(
    toy_corpus, tmp_path, monkeypatch, shapes
):
    prepared: list[list[tuple]] = []
    monkeypatch.setattr(FastEngine, "prepare", lambda self, net, ls, s: prepared.append(list(s)))
    seen = SeenBatches()
    fit(toy_corpus, tmp_path, f"engine.shapes={shapes}", "trainer.max_epochs=4", callbacks=[seen])
    assert len(prepared) == 1  # once, at the start of training
    met = {shape for shape, _ in seen.seen}
    assert met <= set(prepared[0]) and len(met) > 1


def test_bucket_shapes_hold_every_batch_of_any_examples():
    """A property: for random examples and random batches of them, each batch's bucket
    (:func:`bucket_shape`) is among :func:`bucket_shapes` of the examples."""
    rng = torch.Generator().manual_seed(0)
    lengths = [3, 5, 8, 12]
    for square in (True, False):
        src = torch.randint(1, 12, (200,), generator=rng).tolist()
        tgt = torch.randint(1, 11, (200,), generator=rng).tolist()
        shapes = set(bucket_shapes(src, tgt, 4, lengths, square))
        for _ in range(300):
            idx = torch.randperm(200, generator=rng)[: int(torch.randint(1, 5, (1,)))].tolist()
            batch = collate([(i, [5] * src[i], [6] * tgt[i]) for i in idx])
            assert bucket_shape(batch, 4, lengths, square) in shapes


def test_a_padded_batch_keeps_its_sentences_through_pinning_and_moving():
    batch = collate([(0, [5, 6], [7]), (1, [5], [7, 8, 9])])
    padded = BucketPadding(4, (4, 8))(batch)
    assert padded.src.shape == (4, 4) and len(padded) == 2
    assert len(padded.to("cpu")) == 2
    assert BucketPadding(4, (4, 8))(padded) is padded  # already at its bucket
    assert BucketPadding(1, (4, 8))(batch) is batch  # more rows than a bucket: its own shape


def test_buckets_are_prepared_under_the_autocast_the_steps_run_in(
    toy_corpus, tmp_path, monkeypatch
):
    """Lightning enters bf16-mixed's autocast only around ``training_step``: the buckets are
    prepared inside it too, so a graph captured before the first step is the one the steps
    replay (on a GPU its key holds the autocast state: ``GraphedSteps.prepare``)."""
    autocast: dict[str, bool] = {}
    monkeypatch.setattr(FastEngine, "prepare", lambda self, net, ls, s: autocast.setdefault(
        "prepare", torch.is_autocast_enabled("cpu")))  # fmt: skip
    loss = FastEngine.training_loss

    def training_loss(self, *args):
        autocast.setdefault("step", torch.is_autocast_enabled("cpu"))
        return loss(self, *args)

    monkeypatch.setattr(FastEngine, "training_loss", training_loss)
    fit(toy_corpus, tmp_path, "trainer.precision=bf16-mixed", "trainer.max_epochs=1")
    assert autocast == {"prepare": True, "step": True}


def test_a_padded_batch_padded_again_keeps_its_rows_and_its_sentences():
    padded = pad_batch(collate([(0, [5, 6], [7]), (1, [5], [7, 8, 9])]), 4, 4, 4)
    again = pad_batch(padded, 6, 8, 8)
    assert again.src.shape == (6, 8) and again.src_len.tolist() == padded.src_len.tolist() + [1, 1]
    assert len(again) == 2
    assert torch.equal(again.src[:4, :4], padded.src) and again.index.tolist()[2:] == [-1] * 4
