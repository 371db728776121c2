"""Data-parallel runs on two CPU processes (gloo), as a user who scales out meets them: the ranks
stop together whichever received the signal, resume to the unbroken run with dropout on, keep
their CSV log, evaluate their shares to one process's figures, and a two-node torchrun trains
and resumes."""

from __future__ import annotations

import csv
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from conftest import REPO, run_env, tiny_overrides, write_corpus
from ddp_helpers import RECIPE, TWO_RANKS, command, finished, rank_one, step_of, weights

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("ranks")]  # one worker: no port races


@pytest.fixture(scope="session")  # once a worker, however the tests interleave
def corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("ddp")
    return {"train": write_corpus(root, "train", 480, 11), "dev": write_corpus(root, "dev", 40, 12)}


@pytest.fixture(scope="session")
def unbroken(corpus, tmp_path_factory):
    """Three epochs of 30 steps on two ranks, never stopped: what every resume must equal."""
    run = tmp_path_factory.mktemp("unbroken") / "run"
    said = finished(command(corpus, run, "trainer.max_epochs=3"))
    (run.parent / "console.txt").write_text(said.stdout + said.stderr, encoding="utf-8")
    return run


def test_a_two_rank_run_says_its_lines_once_and_rank_1_keeps_its_own_log(unbroken):
    """Both ranks log the kit's line of their data; the console shows rank 0's alone (Lightning's
    own per-rank lines are Lightning's), rank 1's is in its own file, and the empty log file
    Hydra made for rank 1 is gone."""
    console = (unbroken.parent / "console.txt").read_text(encoding="utf-8")
    assert console.count("train pairs 480") == 1, console[-2000:]
    assert "train pairs 480" in (unbroken / "train.rank1.log").read_text(encoding="utf-8")
    assert not list(unbroken.glob("*_ddp_process_*.log"))


def stopped_in_epoch_two(corpus, run: Path, rank: int, signum: int) -> tuple[str, int]:
    """Start a run, send ``signum`` to one rank in its second epoch; its stderr and the step
    its checkpoint holds."""
    main = subprocess.Popen(command(corpus, run, "trainer.max_epochs=3"), cwd=REPO,
                            env=run_env(), stderr=subprocess.PIPE, text=True)  # fmt: skip
    target = main.pid if rank == 0 else rank_one(main)
    deadline = time.time() + 300
    while step_of(run) < 35 and main.poll() is None and time.time() < deadline:
        time.sleep(0.02)
    os.kill(target, signum)
    _, err = main.communicate(timeout=180)
    assert main.returncode == 128 + signum, err[-3000:]
    return err, step_of(run)


@pytest.mark.parametrize(
    ("rank", "signum"),
    [(1, signal.SIGINT), pytest.param(0, signal.SIGTERM, marks=pytest.mark.long)],
)
def test_a_signal_to_one_rank_stops_both_and_the_resume_is_the_unbroken_run(
    corpus, unbroken, tmp_path, rank, signum
):
    run = tmp_path / "run"
    err, step = stopped_in_epoch_two(corpus, run, rank, signum)
    assert 30 < step < 60, step
    assert err.count(f"interrupted by signal {signum}") == 1 and "resume with:" in err
    assert "Traceback" not in err
    finished([sys.executable, "-m", "luong_lit", "train", f"hydra.run.dir={run}", "ckpt_path=last"])
    for key, value in weights(unbroken).items():  # every rank's dropout masks continued
        torch.testing.assert_close(weights(run)[key], value, rtol=0, atol=0, msg=key)


def rows(run: Path) -> list[dict]:
    with open(run / "csv" / "metrics.csv", newline="") as fh:
        return list(csv.DictReader(fh))


@pytest.mark.long  # ddp_sim in CI: test_training's test_ddp_sim_two_cpu_processes
def test_ddp_sim_keeps_every_csv_row_and_a_complete_results_json(corpus, tmp_path):
    run = tmp_path / "run"
    test = write_corpus(tmp_path, "test", 20, 13)
    extra = ["trainer=ddp_sim", "trainer.max_epochs=2", "trainer.log_every_n_steps=5",
             "test_after_training=true", f"+data.test.toy.src={test['src']}",
             f"+data.test.toy.tgt={test['tgt']}", "callbacks.beam_bleu.on_test=false"]  # fmt: skip
    args = [*tiny_overrides(corpus), *RECIPE, f"hydra.run.dir={run}", *extra]
    finished([sys.executable, "-m", "luong_lit", "train", *args])
    logged = rows(run)
    assert sum(bool(r.get("train/loss")) for r in logged) == 12  # 2 epochs of 30 steps, every 5th
    assert sum(bool(r.get("val/ppl")) for r in logged) == 2
    assert any(r.get("test/toy/ppl") for r in logged)
    results = json.loads((run / "results.json").read_text())
    assert {"dev_ppl", "toy"} <= set(results) and results["toy"]["bleu_greedy"] >= 0
    assert "epoch 2 validated" in (run / "train.log").read_text()  # a spawned rank's lines


def test_sharded_evaluation_equals_one_process(corpus, tmp_path):
    """The learning rate 0 keeps the initial weights, the same on one process and two ranks:
    the dev and test figures of each rank's share, summed or gathered, are one process's."""
    test = write_corpus(tmp_path, "test", 37, 13)
    same = ["trainer.max_epochs=1", "model.optimizer.lr=0", "test_after_training=true",
            f"+data.test.toy.src={test['src']}", f"+data.test.toy.tgt={test['tgt']}",
            "callbacks.beam_bleu.beam=3", "data.eval_batch_size=4"]  # fmt: skip
    one, two = tmp_path / "one", tmp_path / "two"
    finished([*command(corpus, one, *same), "trainer=cpu", "trainer.devices=1"])
    finished(command(corpus, two, *same))
    a, b = rows(one)[-2], rows(two)[-2]  # the validation's row (then the test's)
    assert float(b["val/ppl"]) == pytest.approx(float(a["val/ppl"]), rel=1e-6)
    assert b["val/bleu"] == a["val/bleu"]
    ra, rb = (json.loads((r / "results.json").read_text())["toy"] for r in (one, two))
    assert rb["ppl"] == pytest.approx(ra["ppl"], rel=1e-6)
    assert (rb["bleu_greedy"], rb["bleu_beam"]) == (ra["bleu_greedy"], ra["bleu_beam"])


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def two_nodes(corpus, run: Path | None, *extra: str) -> None:
    """torchrun with two agents on this machine (``--nnodes=2``), one process each; ``run``
    None: no ``hydra.run.dir``, the ranks name the folder."""
    port, procs = free_port(), []
    folder = [] if run is None else [f"hydra.run.dir={run}"]
    args = [*tiny_overrides(corpus), *RECIPE, "trainer=ddp", "trainer.accelerator=cpu",
            "trainer.devices=1", "trainer.num_nodes=2", *folder, *extra]  # fmt: skip
    for node in (0, 1):
        cmd = [sys.executable, "-m", "torch.distributed.run", "--nnodes=2", "--nproc-per-node=1",
               f"--node-rank={node}", "--master-addr=127.0.0.1", f"--master-port={port}",
               "-m", "luong_lit.train", *args]  # fmt: skip
        procs.append(subprocess.Popen(cmd, cwd=REPO, env=run_env(), stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True))  # fmt: skip
    for proc in procs:
        _, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err[-3000:]


@pytest.mark.long  # two nodes in CI: test_two_nodes_without_an_id_share_rank_0s_folder
def test_a_two_node_torchrun_trains_and_resumes(corpus, tmp_path):
    run = tmp_path / "run"
    two_nodes(corpus, run, "trainer.max_steps=6")
    assert step_of(run) == 6
    two_nodes(corpus, run, "ckpt_path=last", "trainer.max_steps=10")
    assert step_of(run) == 10
    log = (run / "train.log").read_text()
    assert log.count("resuming from") == 1  # rank 0's lines; rank 1 keeps its own file
    assert (run / "train.rank1.log").is_file()


def test_two_nodes_without_an_id_share_rank_0s_folder(corpus, tmp_path):
    """torchrun without ``--rdzv-id``: one run folder, rank 0's, with both ranks' logs in it.
    The folder's stamp is made to differ by rank (as two clocks a second apart would)."""
    runs = tmp_path / "runs"
    two_nodes(corpus, None, "trainer.max_steps=2",
              f"hydra.run.dir='{runs}/${{luong_lit.run_name:stamp-${{oc.env:RANK}}}}'")  # fmt: skip
    assert [p.name for p in runs.iterdir()] == ["stamp-0"]
    assert (runs / "stamp-0" / "train.log").is_file()
    assert (runs / "stamp-0" / "train.rank1.log").is_file() and step_of(runs / "stamp-0") == 2


def test_sigterm_to_the_parent_of_spawned_ranks_stops_them_with_the_resume_line(corpus, tmp_path):
    """``trainer=ddp_sim``: the parent trains nothing itself; the signal goes on to its ranks."""
    run = tmp_path / "run"
    cmd = [a for a in command(corpus, run, "trainer.max_epochs=30") if a not in TWO_RANKS]
    main = subprocess.Popen([*cmd, "trainer=ddp_sim"], cwd=REPO, env=run_env(),
                            stderr=subprocess.PIPE, text=True)  # fmt: skip
    while step_of(run) < 35 and main.poll() is None:
        time.sleep(0.02)
    main.send_signal(signal.SIGTERM)
    _, err = main.communicate(timeout=180)
    assert main.returncode == 143, err[-3000:]
    assert "interrupted by signal 15" in err and "resume with:" in err
    assert step_of(run) >= 35 and "interrupted by signal 15" in (run / "train.log").read_text()
