"""Checkpoints written off the training thread (``checkpoint_writes=background``; ``auto`` on a
GPU): each holds the step it was asked at, removals and the run's end wait for the writes before
them, and a failed write is said in one line, not lost. A whole run written each way keeps the
same checkpoints."""

from __future__ import annotations

import os
import threading
import zipfile

import pytest
import torch
from conftest import run_here, tiny_overrides

from luong_lit.checkpoint import CheckpointError
from luong_lit.training.checkpoint_io import AtomicCheckpointIO


def checkpoint(value: float) -> dict:
    return {"state_dict": {"w": torch.full((64, 64), value)}, "step": 1, "nested": [torch.ones(3)]}


def test_a_checkpoint_holds_its_step_though_training_changes_the_weights_at_once(tmp_path):
    io, ckpt = AtomicCheckpointIO("background"), checkpoint(1.0)
    gate = threading.Event()
    io.save_checkpoint({"blocker": _Blocker(gate)}, tmp_path / "first.ckpt")  # holds the writer
    io.save_checkpoint(ckpt, tmp_path / "a.ckpt")
    ckpt["state_dict"]["w"].add_(5.0)  # the next optimizer step, before the write has run
    assert not (tmp_path / "a.ckpt").exists()  # still waiting behind the first write
    gate.set()
    io.wait()
    saved = torch.load(tmp_path / "a.ckpt", weights_only=True)
    assert torch.equal(saved["state_dict"]["w"], torch.full((64, 64), 1.0))
    assert saved["step"] == 1 and torch.equal(saved["nested"][0], torch.ones(3))


class _Blocker:
    """Pickled by the writer: waits for ``gate`` first (a write still running)."""

    def __init__(self, gate: threading.Event) -> None:
        self.gate = gate

    def __reduce__(self):
        self.gate.wait(30)
        return (int, (0,))


def test_tensors_that_are_one_stay_one_in_the_copy(tmp_path):
    """A tied output layer's weight is the embedding's: written once, read back as one."""
    from luong_lit.training.checkpoint_io import host_copy

    w = torch.randn(50, 8)
    ckpt = {"state_dict": {"embedding.weight": w.detach(), "out.weight": w.detach()}}
    copied = host_copy(ckpt)["state_dict"]
    assert copied["embedding.weight"] is copied["out.weight"]
    assert copied["out.weight"].data_ptr() != w.data_ptr()
    for way in ("background", "inline"):
        io = AtomicCheckpointIO(way)
        io.save_checkpoint(ckpt, tmp_path / f"{way}.ckpt")
        io.teardown()
    for way in ("background", "inline"):  # one storage of the weight's 50 x 8 floats
        stored = [i.file_size for i in zipfile.ZipFile(tmp_path / f"{way}.ckpt").infolist()
                  if "/data/" in i.filename and "serialization_id" not in i.filename]  # fmt: skip
        assert stored == [50 * 8 * 4], way


def test_a_removal_waits_for_the_writes_before_it(tmp_path):
    io = AtomicCheckpointIO("background")
    for _ in range(3):
        io.save_checkpoint(checkpoint(2.0), tmp_path / "best.ckpt")
        io.remove_checkpoint(tmp_path / "best.ckpt")
        assert not (tmp_path / "best.ckpt").exists()  # not written back after its removal
    io.teardown()
    assert not list(tmp_path.iterdir())  # no temporary file left either


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only directory")
def test_a_failed_write_is_one_line_at_the_next_wait(tmp_path):
    io = AtomicCheckpointIO("background")
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        io.save_checkpoint(checkpoint(3.0), locked / "last.ckpt")
        with pytest.raises(CheckpointError, match="cannot write the checkpoint"):
            io.wait()
    finally:
        locked.chmod(0o700)


def failing_writes(monkeypatch) -> None:
    import luong_lit.training.checkpoint_io as cio

    def failing(obj, path):
        raise CheckpointError(f"{path}: cannot write the checkpoint (the disk is full)")

    monkeypatch.setattr(cio, "atomic_save", failing)


def test_a_failed_write_raises_at_the_next_save_on_the_training_thread(tmp_path, monkeypatch):
    io = AtomicCheckpointIO("background")
    failing_writes(monkeypatch)
    io.save_checkpoint(checkpoint(1.0), tmp_path / "a.ckpt")
    io._pool.submit(lambda: None).result()  # the failed write has run
    monkeypatch.undo()
    with pytest.raises(CheckpointError, match="a.ckpt: cannot write the checkpoint"):
        io.save_checkpoint(checkpoint(1.0), tmp_path / "b.ckpt")


def test_a_failed_write_is_said_at_teardown_without_hiding_the_error_that_ends_the_run(
    tmp_path, monkeypatch, caplog
):
    io = AtomicCheckpointIO("background")
    failing_writes(monkeypatch)
    io.save_checkpoint(checkpoint(1.0), tmp_path / "a.ckpt")
    with pytest.raises(CheckpointError, match="disk is full"):
        io.teardown()  # the run's end: the failure is the error
    io.save_checkpoint(checkpoint(1.0), tmp_path / "b.ckpt")
    try:
        raise KeyboardInterrupt  # a stop, as Lightning's teardown sees it
    except KeyboardInterrupt:
        io.teardown()  # says the failed write, raises nothing: the stop is the run's end
    assert "b.ckpt: cannot write the checkpoint" in caplog.text


def test_at_most_two_writes_wait_and_a_stops_checkpoint_is_written_at_once(tmp_path):
    from types import SimpleNamespace

    from luong_lit.training.checkpoint_io import QUEUED, inline_writes

    io, gate = AtomicCheckpointIO("background"), threading.Event()
    io.save_checkpoint({"blocker": _Blocker(gate)}, tmp_path / "first.ckpt")
    threading.Timer(0.5, gate.set).start()
    for n in range(3):  # the third waits until the first is written
        io.save_checkpoint(checkpoint(float(n)), tmp_path / f"{n}.ckpt")
        assert len(io._pending) <= QUEUED == 2
    trainer = SimpleNamespace(strategy=SimpleNamespace(checkpoint_io=io))
    with inline_writes(trainer):  # a stop's last.ckpt: on disk when the save returns
        io.save_checkpoint(checkpoint(9.0), tmp_path / "last.ckpt")
        assert (tmp_path / "last.ckpt").is_file() and not io._pending
    assert io.writes == "background"
    io.teardown()
    assert sorted(p.name for p in tmp_path.glob("*.ckpt")) == [
        "0.ckpt", "1.ckpt", "2.ckpt", "first.ckpt", "last.ckpt"]  # fmt: skip


def test_a_run_writes_the_same_checkpoints_in_the_background_as_inline(toy_corpus, tmp_path):
    found = {}
    for writes in ("background", "inline"):
        run = tmp_path / writes
        args = ["train", *tiny_overrides(toy_corpus), "trainer.max_steps=6", "seed=3",
                "trainer.val_check_interval=3", "test_after_training=false",
                f"checkpoint_writes={writes}", f"hydra.run.dir={run}"]  # fmt: skip
        done = run_here(args)
        assert done.returncode == 0, done.stderr.decode()[-2000:]
        found[writes] = {
            p.name: torch.load(p, weights_only=True) for p in (run / "checkpoints").glob("*.ckpt")
        }
    assert sorted(found["background"]) == sorted(found["inline"]) == ["best.ckpt", "last.ckpt"]
    for name, ckpt in found["background"].items():
        other = found["inline"][name]
        assert ckpt["global_step"] == other["global_step"], name
        for key, value in ckpt["state_dict"].items():
            assert torch.equal(value, other["state_dict"][key]), (name, key)
        moments = [(a, b) for a, b in zip(_tensors(ckpt["optimizer_states"]),
                                          _tensors(other["optimizer_states"]))]  # fmt: skip
        assert moments and all(torch.equal(a, b) for a, b in moments), name


def _tensors(x) -> list:
    if isinstance(x, torch.Tensor):
        return [x]
    if isinstance(x, dict):
        return [t for k in sorted(x, key=str) for t in _tensors(x[k])]
    if isinstance(x, (list, tuple)):
        return [t for v in x for t in _tensors(v)]
    return []


def test_the_heatmaps_drawn_in_their_thread_are_all_saved_and_logged(toy_corpus, tmp_path):
    """Pictures drawn off the training thread: every validation's are saved and logged to
    TensorBoard at that validation's step, the run's last ones too."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    run = tmp_path / "run"
    args = ["train", *tiny_overrides(toy_corpus), "trainer.max_epochs=2", "logger=tensorboard",
            "callbacks.attention_heatmaps.every_n_epochs=1", "test_after_training=false",
            "callbacks.attention_heatmaps.draw=background",
            "callbacks.attention_heatmaps.sentences=[0,1]", f"hydra.run.dir={run}"]  # fmt: skip
    done = run_here(args)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    pngs = sorted(p.name for p in (run / "attention").glob("*.png"))
    assert pngs == [f"epoch00{e}_dev{i}.png" for e in (1, 2) for i in (0, 1)]
    events = EventAccumulator(str(run / "tensorboard"), size_guidance={"images": 0}).Reload()
    steps = {tag: [e.step for e in events.Images(tag)] for tag in events.Tags()["images"]}
    last = torch.load(run / "checkpoints" / "last.ckpt", weights_only=True)["global_step"]
    validated = [last // 2, last]  # each epoch's end: the step the pictures are logged at
    assert steps == {"attention/dev0": validated, "attention/dev1": validated}


def test_a_logger_that_uploads_each_checkpoint_as_saved_gets_it_written_inline():
    """W&B's ``log_model=all`` reads each checkpoint right after its save: written inline."""
    from types import SimpleNamespace

    from luong_lit.training.checkpoint_io import write_checkpoints

    for log_model, writes, found in [
        ("all", "auto", "inline"),
        ("all", "background", "inline"),
        (True, "background", "background"),
        (False, "auto", "auto"),
    ]:
        io = AtomicCheckpointIO()
        trainer = SimpleNamespace(strategy=SimpleNamespace(checkpoint_io=io),
                                  loggers=[SimpleNamespace(_log_model=log_model)])  # fmt: skip
        write_checkpoints(trainer, writes)
        assert io.writes == found, (log_model, writes)
