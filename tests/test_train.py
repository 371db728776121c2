"""Training through the real Hydra config: every combination, resume, sweeps, errors."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from conftest import compose_cfg, small_model, tiny_overrides

from luong_lit.checkpoint import CheckpointError, load_model
from luong_lit.config import CONF_DIR
from luong_lit.engines import FastEngine
from luong_lit.nn import ConfigError
from luong_lit.training.module import LuongLitModule
from luong_lit.training.run import train
from luong_lit.training.schedules import Halving, LinearDecay, anneal_factor, halving_factor

REPO = Path(__file__).resolve().parents[1]
COMBOS = list(
    itertools.product(
        ["none", "global", "local_m", "local_p"],
        ["dot", "general", "concat", "location"],
        [True, False],
    )
)


def is_valid(att, score, feed):
    if att == "none":
        return not feed
    return att == "global" or score != "location"


@pytest.mark.parametrize("att,score,feed", COMBOS)
def test_fast_dev_run_every_combination(att, score, feed, toy_corpus, tmp_path):
    cfg = compose_cfg(
        tiny_overrides(toy_corpus)
        + [f"attention={att}", f"score={score}", f"feed_input={str(feed).lower()}", "debug=fdr"],
        tmp_path,
    )
    if not is_valid(att, score, feed):
        with pytest.raises(ConfigError, match=f"attention={att}"):
            train(cfg)
        return
    metrics = train(cfg)
    assert torch.isfinite(torch.tensor(metrics["train/loss"]))


def test_schedule_halving_paper_and_code():
    paper = [halving_factor(e, 5, "paper") for e in range(10)]
    code = [halving_factor(e, 5, "code") for e in range(10)]
    assert paper == [1, 1, 1, 1, 1, 0.5, 0.25, 0.125, 0.0625, 0.03125]
    assert code == [1, 1, 1, 1, 1, 1, 0.5, 0.25, 0.125, 0.0625]


def test_schedule_anneal_is_linear_to_zero_over_the_tail():
    factors = [anneal_factor(s, 10, 4) for s in range(10)]
    assert factors == [1, 1, 1, 1, 1, 1, 1, 0.75, 0.5, 0.25]  # naive: (10 - s) / 4 once s > 6
    with pytest.raises(ValueError, match="epochs=0 is out of range"):
        LinearDecay(epochs=0)
    with pytest.raises(ValueError, match="after=-1 is out of range"):
        Halving(after=-1)
    with pytest.raises(ValueError, match="convention='book' is unknown"):
        Halving(convention="book")


@pytest.mark.filterwarnings("ignore:.*self.trainer.*reference is not registered")
def test_label_smoothing_shapes_the_training_loss_only():
    """The training loss is the smoothed loss / batch size; validation ppl stays the plain NLL."""
    from torch.nn import functional as F

    from luong_lit.data.loading.batching import collate

    torch.manual_seed(0)
    net = small_model(num_layers=1).eval()
    batch = collate([(0, [4, 5, 6], [7, 8]), (1, [9, 4], [5, 6, 7])])
    module = LuongLitModule(net, FastEngine(), torch.optim.Adam, label_smoothing=0.1)
    logits = net.logits(net(batch.src, batch.src_len, batch.tgt_in)[0])  # (B, T, V)
    mask = batch.tgt_out != 0

    def nll(eps: float):
        return F.cross_entropy(
            logits[mask], batch.tgt_out[mask], reduction="sum", label_smoothing=eps
        )

    torch.testing.assert_close(module.training_step(batch, 0), nll(0.1) / 2)  # 2 sentences
    module.validation_step(batch, 0)
    torch.testing.assert_close(module.val_nll.compute(), nll(0.0))
    with pytest.raises(ValueError, match="label_smoothing=1.5 is out of range"):
        LuongLitModule(net, FastEngine(), torch.optim.Adam, label_smoothing=1.5)


HALVING = ("schedule=halving", "model.scheduler.after=1")


def _fit(tmp_path, corpus, epochs, extra=(), schedule=HALVING):
    cfg = compose_cfg(
        tiny_overrides(corpus)
        + [
            f"trainer.max_epochs={epochs}",
            "dropout=0.3",
            "optim=sgd_paper",
            *schedule,
            "test_after_training=false",
            *extra,
        ],
        tmp_path,
    )
    train(cfg)
    return tmp_path / "checkpoints"


def test_resume_continues_the_same_run(toy_corpus, tmp_path):
    full = _fit(tmp_path / "full", toy_corpus, 3)
    _fit(tmp_path / "split", toy_corpus, 2)
    resumed = _fit(tmp_path / "split", toy_corpus, 3, ["ckpt_path=last"])
    a = torch.load(full / "last.ckpt", weights_only=True)
    b = torch.load(resumed / "last.ckpt", weights_only=True)
    assert a["epoch"] == b["epoch"] and a["global_step"] == b["global_step"] > 0
    assert a["lr_schedulers"] == b["lr_schedulers"] and b["lr_schedulers"][0]["_last_lr"][0] < 1.0
    for key, value in a["state_dict"].items():  # same data order, dropout masks and lr schedule
        torch.testing.assert_close(b["state_dict"][key], value, msg=key)


def test_resume_continues_the_annealed_schedule(toy_corpus, tmp_path):
    """The per-step schedule depends on the planned length, so the interrupted run is the full
    run's own epoch-2 checkpoint, resumed in a fresh directory."""
    anneal = ["schedule=linear_decay", "model.scheduler.epochs=2"]
    full = _fit(
        tmp_path / "full", toy_corpus, 3, ["callbacks.epoch_checkpoints.every_n_epochs=1"], anneal
    )
    resumed = _fit(
        tmp_path / "resumed", toy_corpus, 3, [f"ckpt_path={full / 'epochs' / 'e01.ckpt'}"], anneal
    )
    a = torch.load(full / "last.ckpt", weights_only=True)
    b = torch.load(resumed / "last.ckpt", weights_only=True)
    mid = torch.load(full / "epochs" / "e01.ckpt", weights_only=True)["lr_schedulers"][0][
        "_last_lr"
    ][0]
    assert a["lr_schedulers"] == b["lr_schedulers"] and a["lr_schedulers"][0]["_last_lr"][0] == 0.0
    assert a["lr_schedulers"][0]["last_epoch"] == a["global_step"] and 0.0 < mid < 1.0
    for key, value in a["state_dict"].items():
        torch.testing.assert_close(b["state_dict"][key], value, msg=key)


def test_epoch_checkpoints_are_off_by_default_and_average_when_on(toy_corpus, tmp_path):
    from luong_lit.checkpoint import average_checkpoints

    assert not (_fit(tmp_path / "off", toy_corpus, 2) / "epochs").exists()
    ckpts = _fit(tmp_path / "on", toy_corpus, 2, ["callbacks.epoch_checkpoints.every_n_epochs=1"])
    epochs = sorted(p.name for p in (ckpts / "epochs").iterdir())
    assert epochs == ["e00.ckpt", "e01.ckpt"] and (ckpts / "best.ckpt").is_file()
    avg = average_checkpoints([ckpts / "epochs" / e for e in epochs], tmp_path / "avg.ckpt")
    net = load_model(avg)[0]
    e0, e1 = (load_model(ckpts / "epochs" / e)[0].state_dict() for e in epochs)
    for key, value in net.state_dict().items():
        torch.testing.assert_close(value, (e0[key] + e1[key]) / 2, msg=key)


def test_checkpoint_loads_safely(toy_corpus, tmp_path):
    ckpts = _fit(tmp_path, toy_corpus, 1)
    net, src_vocab, tgt_vocab, meta = load_model(ckpts / "best.ckpt")
    assert len(tgt_vocab) == net.decoder.W_s.out_features and "A" in tgt_vocab.stoi
    (tmp_path / "bad.ckpt").write_bytes(b"not a checkpoint")
    with pytest.raises(CheckpointError, match=r"bad\.ckpt: not a readable checkpoint"):
        load_model(tmp_path / "bad.ckpt")
    with pytest.raises(CheckpointError, match="does not exist"):
        load_model(tmp_path / "missing.ckpt")
    ckpt = torch.load(ckpts / "best.ckpt", weights_only=True)
    ckpt["luong_lit"]["net"]["_target_"] = "os.system"
    torch.save(ckpt, tmp_path / "evil.ckpt")
    with pytest.raises(CheckpointError, match=r"evil\.ckpt: checkpoint config net: 'os.system'"):
        load_model(tmp_path / "evil.ckpt")


class _Pickled:
    """Not a tensor or container: ``weights_only=True`` must refuse to unpickle it."""


def _edited(ckpts, tmp_path, edit) -> Path:
    ckpt = torch.load(ckpts / "best.ckpt", weights_only=True)
    edit(ckpt)
    torch.save(ckpt, tmp_path / "edited.ckpt")
    return tmp_path / "edited.ckpt"


def test_checkpoint_never_runs_code_and_damage_is_named(toy_corpus, tmp_path):
    ckpts = _fit(tmp_path, toy_corpus, 1)
    written = tmp_path / "written.bin"
    torch.save({"luong_lit": {"net": {}}, "x": _Pickled()}, tmp_path / "pickled.ckpt")
    with pytest.raises(
        CheckpointError, match=r"pickled\.ckpt: refused: it holds an object of .*_Pickled"
    ) as err:
        load_model(tmp_path / "pickled.ckpt")
    assert "weights_only" not in str(err.value) and "likely succeed" not in str(err.value)
    attacks = {  # each would call something if built by hydra.utils.instantiate
        "list": lambda c: c["luong_lit"]["net"].update(
            junk=[{"_target_": "builtins.print", "_args_": ["x"]}]
        ),
        "attribute": lambda c: c["luong_lit"]["net"].update(
            score={"_target_": "luong_lit.nn.scores.torch.save", "obj": 1, "f": str(written)}
        ),
        "argument": lambda c: c["luong_lit"]["net"]["score"].update(dim={"_target_": "os.getcwd"}),
        "unhashable": lambda c: c["luong_lit"]["net"]["score"].update(_target_=["os.system"]),
    }
    for name, edit in attacks.items():
        with pytest.raises(CheckpointError, match=r"edited\.ckpt: checkpoint config net\."):
            load_model(_edited(ckpts, tmp_path, edit))
        assert not written.exists(), name
    damage = {
        "vocabularies": lambda c: c["luong_lit"]["src_vocab"].reverse(),
        "cannot build the model": lambda c: c["luong_lit"]["net"].update(no_such_option=1),
        "cannot build the model .*hidden_size=-3": lambda c: c["luong_lit"]["net"].update(
            hidden_size=-3
        ),
        "weights do not fit": lambda c: c["state_dict"].clear(),
        "no weights inside": lambda c: c.pop("state_dict"),
    }
    for message, edit in damage.items():
        with pytest.raises(CheckpointError, match=rf"edited\.ckpt: .*{message}"):
            load_model(_edited(ckpts, tmp_path, edit))


def _run_cli(args, cwd, timeout=300):
    env = {**os.environ, "PYTHONWARNINGS": "ignore", "OMP_NUM_THREADS": "1"}
    return subprocess.run(
        [sys.executable, "-m", "luong_lit.train", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_cli_reports_bad_data_without_traceback(toy_corpus, tmp_path):
    args = [a for a in tiny_overrides(toy_corpus) if not a.startswith("data.train.src")]
    res = _run_cli(
        args + [f"data.train.src={tmp_path}/missing.en", f"hydra.run.dir={tmp_path}/run"], REPO
    )
    assert res.returncode == 2
    assert f"error: {tmp_path}/missing.en: file does not exist" in res.stderr
    assert "Traceback" not in res.stderr


@pytest.mark.slow
def test_multirun_sweep_writes_one_directory_per_job(toy_corpus, tmp_path):
    res = _run_cli(
        [
            "-m",
            "attention=local_p,global",
            "score=dot,general",
            *tiny_overrides(toy_corpus),
            "debug=fdr",
            f"hydra.sweep.dir={tmp_path}/sweep",
        ],
        REPO,
        timeout=600,
    )
    assert res.returncode == 0, res.stderr[-2000:]
    jobs = sorted(p for p in (tmp_path / "sweep").iterdir() if p.is_dir())
    assert len(jobs) == 4
    for job in jobs:
        assert (job / ".hydra" / "config.yaml").is_file() and (job / "train.log").is_file()
    import yaml

    combos = set()
    for job in jobs:
        cfg = yaml.safe_load((job / ".hydra" / "config.yaml").read_text())
        combos.add((cfg["model"]["net"]["attention"]["name"], cfg["model"]["net"]["score"]["name"]))
    assert combos == {(a, s) for a in ("local_p", "global") for s in ("dot", "general")}


@pytest.mark.slow
def test_ddp_sim_two_cpu_processes(toy_corpus, tmp_path):
    """Two ranks (ddp_spawn on CPU), each taking every second batch; a best checkpoint results."""
    cfg = compose_cfg(
        tiny_overrides(toy_corpus)
        + ["trainer=ddp_sim", "trainer.max_epochs=1", "test_after_training=false"],
        tmp_path,
    )
    train(cfg)
    net, _, tgt_vocab, _ = load_model(tmp_path / "checkpoints" / "best.ckpt")
    assert net.decoder.W_s.out_features == len(tgt_vocab)


EXPERIMENTS = sorted(p.stem for p in (CONF_DIR / "experiment").glob("[!_]*.yaml"))


@pytest.mark.parametrize("name", EXPERIMENTS)
def test_every_experiment_config_builds_its_model(name, tmp_path):
    import hydra

    cfg = compose_cfg(
        [f"experiment={name}", "model.net.embed_size=8", "model.net.hidden_size=8"], tmp_path
    )
    net = hydra.utils.instantiate(cfg.model.net)(src_vocab_size=12, tgt_vocab_size=12)
    prefix = next((p for p in ("table4_", "align_") if name.startswith(p)), None)
    if prefix:  # the file names the Table 4 or Table 6 row: attention and score
        attention, score = name[len(prefix) :].rsplit("_", 1)
        kind = {
            "global": "GlobalAttention",
            "local_m": "LocalMonotonicAttention",
            "local_p": "LocalPredictiveAttention",
        }[attention]
        assert type(net.decoder.attention).__name__ == kind
        assert type(net.decoder.attention.score).__name__ == f"{score.capitalize()}Score"
        assert cfg.feed_input and cfg.dropout == 0.2
    if prefix == "align_":  # one corpus: the WMT samples and Multi30k, lowercased
        assert list(cfg.data.train) == [
            "europarl_v7_head20k",
            "opennmt_toy_ende",
            "nmt_hybrid_train10k",
            "multi30k:train",
        ]
        assert cfg.data.tokenizer_opts.lowercase


def test_table4_has_every_attention_row():
    rows = {n for n in EXPERIMENTS if n.startswith("table4_")}
    assert rows == {
        f"table4_{a}_{s}" for a in ("global", "local_m", "local_p") for s in ("dot", "general")
    } | {"table4_global_location"}


def test_each_epoch_of_a_training_run_draws_its_own_batch_order(toy_corpus, tmp_path):
    """The trainer tells only a sampler of the epoch, never a batch sampler: the loader must,
    or every epoch repeats the first one's order."""
    import lightning as L

    from luong_lit.training.build import build

    cfg = compose_cfg(
        tiny_overrides(toy_corpus)
        + ["trainer.max_epochs=3", "test_after_training=false", "data.batch_size=4"],
        tmp_path,
    )
    dm, model, trainer = build(cfg)
    seen: dict[int, list[list[int]]] = {}

    class Record(L.Callback):
        def on_train_batch_start(self, trainer, pl_module, batch, batch_idx) -> None:
            seen.setdefault(trainer.current_epoch, []).append(batch.index.tolist())

    trainer.callbacks.append(Record())
    trainer.fit(model, dm)
    assert len(seen) == 3
    flat = [sorted(i for b in seen[e] for i in b) for e in range(3)]
    assert flat[0] == flat[1] == flat[2] == list(range(64))  # every pair once an epoch...
    assert seen[0] != seen[1] != seen[2]  # ...in a new order each epoch


def test_a_users_own_config_folder_joins_the_search_path(tmp_path):
    """``hydra.searchpath`` adds a folder of configs beside the shipped ones."""
    from luong_lit.config import compose

    (tmp_path / "experiment").mkdir()
    (tmp_path / "experiment" / "mine.yaml").write_text(
        "# @package _global_\ndefaults:\n  - m30k_small\nmodel:\n  net:\n    hidden_size: 64\n"
    )
    cfg = compose([f"hydra.searchpath=[file://{tmp_path}]", "experiment=mine"])
    assert cfg.model.net.hidden_size == 64 and cfg.model.net.embed_size == 256
