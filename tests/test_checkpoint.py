"""``luong_lit.checkpoint``: checkpoints load safely (``weights_only``, nothing run, damage named)
and average into a checkpoint that decodes."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from conftest import fit_toy, run_here, small_model

from luong_lit.checkpoint import CheckpointError, average_checkpoints, load_model
from luong_lit.data.vocab import SPECIALS

SRC, TGT = list(SPECIALS) + list("abcde"), list(SPECIALS) + list("ABCDEF")

NET = {
    "_target_": "luong_lit.nn.Seq2Seq",
    "embed_size": 8,
    "hidden_size": 8,
    "num_layers": 2,
    "attention": "global",
    "score": "general",
}


def _save(path, seed, net_cfg=NET, tgt=TGT):
    torch.manual_seed(seed)
    cfg = {k: v for k, v in net_cfg.items() if k != "_target_"}
    net = small_model(src_vocab_size=len(SRC), tgt_vocab_size=len(tgt), **cfg)
    state = {f"net.{k}": v for k, v in net.state_dict().items()}
    torch.save(
        {
            "state_dict": state,
            "luong_lit": {"net": dict(net_cfg), "src_vocab": SRC, "tgt_vocab": tgt},
            "optimizer_states": [],
        },
        path,
    )
    return net


def _edited(ckpts, tmp_path, edit) -> Path:
    ckpt = torch.load(ckpts / "best.ckpt", weights_only=True)
    edit(ckpt)
    torch.save(ckpt, tmp_path / "edited.ckpt")
    return tmp_path / "edited.ckpt"


def test_average_is_the_mean_of_every_parameter(tmp_path):
    nets = [_save(tmp_path / f"e{i}.ckpt", seed=i) for i in range(3)]
    out = average_checkpoints([tmp_path / f"e{i}.ckpt" for i in range(3)], tmp_path / "avg.ckpt")
    avg, src_vocab, tgt_vocab, meta = load_model(out)  # weights_only=True inside
    assert (
        src_vocab.itos == SRC
        and tgt_vocab.itos == TGT
        and meta.averaged_from == ("e0.ckpt", "e1.ckpt", "e2.ckpt")
    )
    for name, p in avg.named_parameters():
        by_hand = sum(dict(n.named_parameters())[name] for n in nets) / 3
        torch.testing.assert_close(p, by_hand)
    assert "optimizer_states" not in torch.load(out, weights_only=True)


def test_average_of_copies_decodes_like_the_model(tmp_path):
    net = _save(tmp_path / "a.ckpt", seed=0).eval()
    _save(tmp_path / "b.ckpt", seed=0)
    avg = load_model(
        average_checkpoints([tmp_path / "a.ckpt", tmp_path / "b.ckpt"], tmp_path / "avg.ckpt")
    )[0]
    src, src_len, tgt = (
        torch.tensor([[4, 5, 6], [7, 4, 0]]),
        torch.tensor([3, 2]),
        torch.tensor([[2, 4, 5]] * 2),
    )
    torch.testing.assert_close(avg(src, src_len, tgt)[0], net(src, src_len, tgt)[0])


def test_models_that_differ_are_refused_by_name(tmp_path):
    _save(tmp_path / "a.ckpt", seed=0)
    _save(tmp_path / "wide.ckpt", seed=0, net_cfg={**NET, "hidden_size": 16})
    _save(tmp_path / "vocab.ckpt", seed=0, tgt=TGT[:-1])
    with pytest.raises(
        CheckpointError, match=r"wide\.ckpt: its net differs from that of .*a\.ckpt"
    ):
        average_checkpoints([tmp_path / "a.ckpt", tmp_path / "wide.ckpt"], tmp_path / "x.ckpt")
    with pytest.raises(CheckpointError, match=r"vocab\.ckpt: its tgt_vocab differs"):
        average_checkpoints([tmp_path / "a.ckpt", tmp_path / "vocab.ckpt"], tmp_path / "x.ckpt")
    (tmp_path / "bad.ckpt").write_bytes(b"not a checkpoint")
    res = run_here(["average", str(tmp_path / "a.ckpt"), str(tmp_path / "bad.ckpt"),
                    "-o", str(tmp_path / "x.ckpt")])  # fmt: skip
    assert res.returncode == 2
    assert "bad.ckpt: not a readable checkpoint" in res.stderr.decode()
    assert not (tmp_path / "x.ckpt").exists()


def test_checkpoint_loads_safely(toy_corpus, tmp_path):
    ckpts = fit_toy(tmp_path, toy_corpus, 1)
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


def test_checkpoint_never_runs_code_and_damage_is_named(toy_corpus, tmp_path):
    ckpts = fit_toy(tmp_path, toy_corpus, 1)
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


def test_average_says_what_it_wrote_for_one_checkpoint_and_for_several(tmp_path):
    _save(tmp_path / "a.ckpt", seed=0)
    _save(tmp_path / "b.ckpt", seed=1)
    one = run_here(["average", str(tmp_path / "a.ckpt"), "-o", str(tmp_path / "one.ckpt")])
    two = run_here(["average", str(tmp_path / "a.ckpt"), str(tmp_path / "b.ckpt"),
                    "-o", str(tmp_path / "two.ckpt")])  # fmt: skip
    assert (
        one.stdout.decode()
        .strip()
        .endswith("one.ckpt: the weights of the one checkpoint given (nothing averaged)")
    )
    said = two.stdout.decode().strip()
    assert said.endswith("two.ckpt: the mean of 2 checkpoints (a.ckpt, b.ckpt)"), said


@pytest.mark.parametrize("umask", [0o022, 0o002, 0o077], ids=["022", "002", "077"])
def test_a_checkpoint_gets_the_permissions_of_the_runs_other_files(tmp_path, umask):
    """Written through a temporary file, a checkpoint still gets what the umask gives any new
    file (``config.yaml``, ``train.log``), not the temporary file's owner-only mode."""
    import os
    import stat

    from luong_lit.checkpoint import atomic_save

    before = os.umask(umask)
    try:
        (tmp_path / "other.txt").write_text("a run's other file")
        atomic_save({"x": torch.zeros(2)}, tmp_path / "checkpoints" / "last.ckpt")
    finally:
        os.umask(before)
    mode = stat.S_IMODE((tmp_path / "checkpoints" / "last.ckpt").stat().st_mode)
    assert mode == stat.S_IMODE((tmp_path / "other.txt").stat().st_mode) == 0o666 & ~umask


def test_a_missing_checkpoint_names_those_its_folder_holds(tmp_path):
    """``translate RUN/checkpoints/best.ckpt`` of a run that has validated no epoch yet: the
    error says that ``last.ckpt`` is there, and which path to give."""
    folder = tmp_path / "run" / "checkpoints"
    folder.mkdir(parents=True)
    _save(folder / "last.ckpt", seed=0)
    res = run_here(["translate", str(folder / "best.ckpt"), "--quiet"], b"a b\n")
    said = res.stderr.decode()
    assert res.returncode == 2 and said.count("error: ") == 1, said
    assert f"{folder / 'best.ckpt'}: checkpoint does not exist; its folder holds last.ckpt" in said
    assert f"until then use {folder / 'last.ckpt'}" in said
    with pytest.raises(CheckpointError, match=r"gone\.ckpt: checkpoint does not exist$"):
        load_model(tmp_path / "gone.ckpt")  # a folder without checkpoints: nothing to name
