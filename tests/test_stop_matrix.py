"""Stops that are exact everywhere: a run stopped at any moment and resumed with
``ckpt_path=last`` ends as the unbroken run, for every learning-rate schedule, with and without
EMA, early stopping and token batches.

Each cell trains one unbroken run that copies its folder at four moments, as a ``kill -9``
would leave it (``signal_helpers.Snapshot``): in the middle of an epoch, just after an epoch's
validation wrote its checkpoint, during a validation, during the final test. Each copy is put
back in the run's place and resumed, and its end compared with the unbroken run's: the weights
(the raw and the averaged), the optimizer's and the schedule's state, early stopping's counter,
the rate at every step and every logged row, ``best.ckpt`` and ``results.json``.

The cells train in this process on one CPU thread; ``tests/test_ddp_stops.py`` stops two
``ddp`` ranks at each moment, and with ``--long`` (``python -m pytest tests/test_ddp_stops.py
--long``) runs two of these cells on ``ddp_sim``.
"""

from __future__ import annotations

import pytest
from stop_helpers import CELLS, check_cell, matrix_files


@pytest.fixture(scope="session")  # once a worker, however xdist deals the tests
def matrix_corpus(tmp_path_factory):
    return matrix_files(tmp_path_factory.mktemp("matrix"))


@pytest.mark.parametrize("cell", list(CELLS))
def test_a_run_stopped_at_any_moment_resumes_to_the_unbroken_run(matrix_corpus, tmp_path, cell):
    check_cell(matrix_corpus, cell, tmp_path)
