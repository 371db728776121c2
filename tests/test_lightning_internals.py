"""Lightning's non-public API, used in one module (:mod:`luong_lit.training.lightning_internals`):
the Lightning versions it is tested with, refused otherwise, and what each of its functions
does on the installed Lightning."""

from __future__ import annotations

import csv

import lightning as L
import pytest
from conftest import REPO, compose_cfg, tiny_overrides

from luong_lit.errors import UserError
from luong_lit.training.lightning_internals import (
    TESTED,
    VAL_PROGRESS,
    check_lightning_version,
    request_stop,
    rewind_validation,
)


def test_an_untested_lightning_is_refused_in_one_line_where_the_trainer_is_built(
    toy_corpus, tmp_path, monkeypatch
):
    import lightning

    from luong_lit.training.build import build
    from luong_lit.training.run_folder import RunFolder

    monkeypatch.setattr(lightning, "__version__", "2.7.0")
    with pytest.raises(UserError) as err:
        cfg = compose_cfg(tiny_overrides(toy_corpus), tmp_path)
        build(cfg, RunFolder.open(cfg))
    assert str(err.value) == (
        "lightning 2.7.0 is installed, and luong_lit is tested with lightning>=2.6,<2.7 (it "
        "relies on parts of Lightning that may change between its releases): "
        "pip install 'lightning>=2.6,<2.7'"
    )
    for version in ("2.5.9", "3.0.0", "not-a-version"):
        with pytest.raises(UserError, match=rf"^lightning {version} is installed, .*>=2\.6,<2\.7"):
            check_lightning_version(version)
    for version in ("2.6.0", "2.6.6", "2.6.9rc1"):
        check_lightning_version(version)
    monkeypatch.undo()
    check_lightning_version()  # the installed one


def test_the_tested_range_is_the_pin_of_pyproject():
    assert f'"lightning{TESTED}",' in (REPO / "pyproject.toml").read_text(encoding="utf-8")


def test_a_stop_request_stops_the_trainer_as_sigterm_does():
    trainer = L.Trainer(logger=False, enable_checkpointing=False, enable_progress_bar=False)
    assert not trainer.received_sigterm
    request_stop(trainer)
    assert trainer.received_sigterm


def test_a_checkpoint_written_during_validation_validates_that_epoch_again():
    trainer = L.Trainer(logger=False, enable_checkpointing=False, enable_progress_bar=False)
    assert VAL_PROGRESS in trainer.fit_loop.state_dict()  # the installed Lightning's key
    done = {"ready": 4, "started": 4, "processed": 4, "completed": 4}
    progress = {"total": dict(done), "current": dict(done), "is_last_batch": True}
    checkpoint = {"loops": {"fit_loop": {VAL_PROGRESS: progress}}}
    rewind_validation(checkpoint)
    again = {"ready": 1, "started": 1, "processed": 0, "completed": 0}
    assert progress == {"total": again, "current": again, "is_last_batch": False}
    other = {"loops": {"fit_loop": {}}}  # a Lightning that keeps its loops otherwise: as saved
    rewind_validation(other)
    assert other == {"loops": {"fit_loop": {}}}


def test_the_csv_log_survives_a_resume_and_is_cut_back_to_its_step(tmp_path):
    from luong_lit.training.loggers import ResumableCSVLogger

    path = tmp_path / "csv" / "metrics.csv"
    path.parent.mkdir()
    path.write_text("epoch,step,train/loss\n0,1,3.0\n0,2,2.5\n1,3,2.0\n", encoding="utf-8")
    logger = ResumableCSVLogger(save_dir=str(tmp_path), name="csv", version="")
    assert logger.experiment is logger.experiment and path.is_file()  # one writer, file kept
    logger.experiment.keep_until(2)
    logger.log_metrics({"train/loss": 1.5}, step=3)
    logger.save()
    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    kept = [(r["step"], r["train/loss"]) for r in rows]
    assert kept == [("1", "3.0"), ("2", "2.5"), ("3", "1.5")]
