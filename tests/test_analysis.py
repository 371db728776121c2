"""AER, forced alignments, pictures, the report, the W&B logger offline, and the notebook."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from conftest import compose_cfg, run_here, small_model, tiny_overrides
from omegaconf import OmegaConf

from luong_lit.decoding.forced import attention_links, forced_attention
from luong_lit.metrics.aer import (
    aer,
    aer_by_length,
    diagonal_links,
    link_offsets,
    pharaoh,
    position_links,
    read_talp,
    tail_share,
)
from luong_lit.nn import Alignment, Memory
from luong_lit.nn.decoder import DecoderState
from luong_lit.training.run import train

REPO = Path(__file__).resolve().parents[1]


# ------------------------------------------------------------------ AER
def test_aer_on_a_hand_made_example(tmp_path):
    gold = tmp_path / "gold.talp"
    gold.write_text("1-1 2-2 2p3\n1-1 1p2\n1-1 2-2 3-3\n", encoding="utf-8")
    sure_possible = read_talp(gold)
    assert sure_possible[0] == ({(0, 0), (1, 1)}, {(0, 0), (1, 1), (1, 2)})
    hyps = [{(0, 0), (1, 2)}, {(0, 1), (1, 1)}, {(0, 0), (1, 1), (2, 2)}]
    # |A| = 7, |S| = 6, |A∩S| = 1 + 0 + 3, |A∩P| = 2 + 1 + 3
    assert aer(hyps, sure_possible) == pytest.approx(1 - (4 + 6) / (7 + 6))
    assert aer([s for s, _ in sure_possible], sure_possible) == pytest.approx(0.0)
    flipped = read_talp(gold, flip=True)
    assert flipped[0][1] == {(0, 0), (1, 1), (2, 1)}
    assert pharaoh({(2, 1), (0, 0)}) == "0-0 2-1"
    assert diagonal_links(4, 2) == {(1, 0), (3, 1)}
    gold.write_text("1-1 x\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"gold\.talp:1: 'x' is not"):
        read_talp(gold)


def test_aer_by_length_is_the_corpus_aer_of_each_group():
    g = torch.Generator().manual_seed(0)
    lens = [int(n) for n in torch.randint(1, 45, (60,), generator=g)]

    def random_links(n):
        return {(int(torch.randint(n, (1,), generator=g)), j) for j in range(n)}

    gold = [(random_links(n), random_links(n) | random_links(n)) for n in lens]
    gold = [(s, s | p) for s, p in gold]
    hyps = [random_links(n) for n in lens]
    rows = aer_by_length(hyps, gold, lens)
    assert sum(r["n"] for r in rows) == len(lens)
    for row in rows:  # each group scored alone, as a naive filter would
        lo, _, hi = row["bucket"].rstrip("+").partition("-")
        idx = [i for i, n in enumerate(lens) if n >= int(lo) and (not hi or n <= int(hi))]
        assert row["n"] == len(idx)
        assert row["aer"] == pytest.approx(aer([hyps[i] for i in idx], [gold[i] for i in idx]))
    (only,) = aer_by_length(hyps, gold, lens, edges=(100,))
    assert only["aer"] == pytest.approx(aer(hyps, gold))
    with pytest.raises(ValueError, match="3 lengths"):
        aer_by_length(hyps, gold, [1, 2, 3])


def test_tail_share_counts_links_on_the_last_source_words():
    collapsed = [{(9, j) for j in range(10)}, {(0, 0), (1, 1)}]  # the second is too short
    diagonal = [{(j, j) for j in range(10)}, {(0, 0), (1, 1)}]
    assert tail_share(collapsed, [10, 2]) == pytest.approx(1.0)
    assert tail_share(diagonal, [10, 2]) == pytest.approx(0.3)
    assert tail_share(diagonal, [10, 2], k=1) == pytest.approx(0.1)
    assert tail_share(diagonal, [5, 2]) == 0.0  # no sentence is longer than 2k words


def test_link_offsets_measure_how_far_links_lie_from_gold():
    gold = [({(0, 0), (1, 1), (2, 2)}, {(0, 0), (1, 1), (2, 2), (3, 2)}), ({(4, 0)}, {(4, 0)})]
    hyps = [{(0, 0), (0, 1), (3, 2), (3, 5)}, {(0, 0)}]  # (3, 5): no gold link for word 5
    off = link_offsets(hyps, gold, clip=3)
    assert list(off) == ["-3", "-2", "-1", "+0", "+1", "+2", "+3"]
    # links: 0 (exact), -1 (one word early), 0 (the possible link 3-2), -4 clipped to -3
    assert off == pytest.approx(
        {"-3": 0.25, "-2": 0, "-1": 0.25, "+0": 0.5, "+1": 0, "+2": 0, "+3": 0}
    )
    late = link_offsets([{(1, 0), (2, 1)}], [({(0, 0), (1, 1)}, {(0, 0), (1, 1)})])
    assert late["+1"] == 1.0


def test_length_blind_diagonal_follows_the_target_position():
    assert position_links(3, 5) == {(0, 0), (1, 1), (2, 2), (2, 3), (2, 4)}
    assert position_links(0, 2) == set()
    assert position_links(4, 4) == diagonal_links(4, 4)  # equal lengths: both diagonals agree


class PatternStub(torch.nn.Module):
    """Attention forced to a known pattern: at step t all weight is on source position perm[t]."""

    def __init__(self, perm: list[int], content_based: bool) -> None:
        super().__init__()
        self.perm, self.content_based, self.w = (
            perm,
            content_based,
            torch.nn.Parameter(torch.zeros(1)),
        )

    def encode(self, src, src_len):
        B, S = src.shape
        mem = Memory(
            torch.zeros(B, S, 1), torch.zeros(B, S, 1), src_len, torch.ones(B, S, dtype=torch.bool)
        )
        return mem, DecoderState(torch.zeros(1, B, 1), torch.zeros(1, B, 1), torch.zeros(B, 1))

    def step(self, y, state, memory, t):
        B, S = memory.valid.shape
        a_t = torch.zeros(B, 1, S)
        a_t[:, 0, self.perm[t] % S] = 1.0
        return torch.zeros(B, 6), state, Alignment(a_t, None, None)


@pytest.mark.parametrize("content_based", [True, False])
def test_alignment_extraction_on_a_forced_pattern(content_based):
    perm = [3, 1, 0, 2, 4]  # step t attends to source position perm[t]
    stub = PatternStub(perm, content_based)
    att = forced_attention(stub, [[5, 5, 5, 5, 5]], [[4, 4, 4, 4]])
    assert att[0].shape == (5, 5)  # 4 words + the </s> step
    links = attention_links(att, [4], content_based)[0]
    shift = 1 if content_based else 0  # footnote 14
    assert links == {(perm[j + shift], j) for j in range(4)}


def test_alignments_of_a_reversed_model_are_in_original_source_order():
    torch.manual_seed(0)
    rev = small_model(reverse_source=True).eval()
    fwd = small_model(reverse_source=False).eval()
    fwd.load_state_dict(rev.state_dict())
    src, tgt = [[4, 9, 13, 7, 11], [5, 6, 8]], [[10, 12, 14], [15, 4]]
    a_rev = forced_attention(rev, src, tgt)
    a_fwd = forced_attention(
        fwd, [s[::-1] for s in src], tgt
    )  # the same reading, flipped positions
    for r, f in zip(a_rev, a_fwd):
        torch.testing.assert_close(r, f.flip(1))


def test_ensemble_alignment_is_the_sum_of_its_members_attention():
    from luong_lit.decoding.ensemble import Ensemble

    torch.manual_seed(1)
    members = [small_model(attention=att).eval() for att in ("global", "local_m", "local_p")]
    src, tgt = [[4, 9, 13, 7, 11, 6, 5], [5, 6, 8]], [[10, 12, 14, 4], [15, 4]]
    summed = forced_attention(Ensemble(members), src, tgt)
    parts = [forced_attention(m, src, tgt) for m in members]
    for i, a in enumerate(summed):
        torch.testing.assert_close(a, sum(p[i] for p in parts))
    assert not torch.equal(summed[0].argmax(1), parts[0][0].argmax(1))  # the members do disagree


def test_member_links_with_one_convention_equal_the_ensembles_own_links():
    from luong_lit.decoding.ensemble import Ensemble
    from luong_lit.decoding.forced import member_links

    torch.manual_seed(3)
    members = [small_model(attention=att).eval() for att in ("global", "local_m", "local_p")]
    src = [[4, 9, 13, 7, 11, 6, 5], [5, 6, 8], [7, 7, 9, 12]]
    tgt = [[10, 12, 14, 4], [15, 4], [6, 9, 9, 11, 13]]
    for conv in ("paper", "predicted"):
        whole = forced_attention(Ensemble(members), src, tgt)
        want = attention_links(whole, [len(t) for t in tgt], True, conv)
        assert member_links(members, src, tgt, [conv] * 3) == want


class WeightedStub(PatternStub):
    """A :class:`PatternStub` whose one attended position carries ``weight``."""

    def __init__(self, perm, content_based, weight):
        super().__init__(perm, content_based)
        self.weight = weight

    def step(self, y, state, memory, t):
        scores, state, align = super().step(y, state, memory, t)
        return scores, state, Alignment(align.a_t * self.weight, None, None)


@pytest.mark.parametrize("conv", ["paper", "predicted"])
def test_each_member_is_read_under_its_own_convention(conv):
    """The heavier member decides every link, shifted by one step under footnote 14 and not
    under the predicted-word convention; a location member may join content-based ones."""
    from luong_lit.decoding.forced import member_links

    light = PatternStub([0, 1, 2, 3, 4], content_based=False)  # location: a_t serves y_t
    heavy = WeightedStub([3, 1, 0, 2, 4], content_based=True, weight=3.0)
    links = member_links([light, heavy], [[5] * 5], [[4] * 4], ["paper", conv])[0]
    shift = 1 if conv == "paper" else 0
    assert links == {(heavy.perm[j + shift], j) for j in range(4)}
    solo = member_links([light], [[5] * 5], [[4] * 4], ["paper"])[0]
    assert solo == {(j, j) for j in range(4)}  # location: the step that predicted the word


# ------------------------------------------------------------------ tiny runs
@pytest.fixture(scope="module")
def runs(toy_corpus, tmp_path_factory):
    out = {}
    for att in ("global", "local_m", "local_p"):
        d = tmp_path_factory.mktemp(att)
        overrides = [f"attention={att}", "score=general"]
        cfg = compose_cfg(
            tiny_overrides(toy_corpus)
            + overrides
            + [
                "trainer.max_epochs=2",
                "logger=csv",
                "callbacks.attention_heatmaps.sentences=[0,1]",
                "callbacks.attention_heatmaps.every_n_epochs=1",
            ],
            d,
        )
        train(cfg)
        (d / ".hydra").mkdir()
        OmegaConf.save(cfg, d / ".hydra" / "config.yaml")
        OmegaConf.save(OmegaConf.create(overrides), d / ".hydra" / "overrides.yaml")
        out[att] = d
    return out


def test_training_draws_attention_heatmaps_and_learning_curves(runs, tmp_path):
    from luong_lit.analysis.figures import plot_learning_curves, read_metrics

    pngs = sorted((runs["global"] / "attention").glob("*.png"))
    assert [p.name for p in pngs] == [
        "epoch001_dev0.png",
        "epoch001_dev1.png",
        "epoch002_dev0.png",
        "epoch002_dev1.png",
    ]
    assert all(p.read_bytes()[:4] == b"\x89PNG" for p in pngs)
    assert len(read_metrics(runs["global"])["val/nll_per_token"]) == 2
    fig5 = plot_learning_curves(runs, tmp_path / "fig5.png")
    assert fig5.stat().st_size > 1000


def test_seeds_of_one_system_are_drawn_as_their_mean_and_range(runs, tmp_path):
    from luong_lit.analysis.figures import mean_band, plot_learning_curves

    a = [(100, 2.0), (200, 4.0), (300, 6.0)]
    b = [(100, 4.0), (200, 3.0), (200, 1.0)]  # step 200 logged twice (resumed): the last counts
    assert mean_band([a, b]) == ([100, 200], [3.0, 2.5], [2.0, 1.0], [4.0, 4.0])
    assert mean_band([a]) == ([100, 200, 300], [2.0, 4.0, 6.0], [2.0, 4.0, 6.0], [2.0, 4.0, 6.0])
    assert mean_band([a, [(50, 1.0)]]) == ([], [], [], [])
    two = {"global, 2 seeds": [runs["global"], runs["local_m"]], "local_p": runs["local_p"]}
    assert plot_learning_curves(two, tmp_path / "fig5.png").stat().st_size > 1000


def test_report_puts_runs_beside_the_paper(runs, tmp_path):
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "luong_lit",
            "report",
            *map(str, runs.values()),
            "--out",
            str(tmp_path / "r.md"),
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert res.returncode == 0, res.stderr
    lines = (tmp_path / "r.md").read_text().splitlines()
    assert len(lines) == 5
    other = "Table 4: local_p (general) (measured on WMT'14 En→De; this run: files) | – | – | – |"
    assert "| local_p | general |" in lines[4] and f"{other} 0.36 |" in lines[4]
    res = subprocess.run(
        [sys.executable, "-m", "luong_lit", "report", str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert res.returncode == 2 and "not a luong_lit run directory" in res.stderr


def test_align_reads_each_member_under_the_convention_given(runs, tmp_path):
    src, tgt, gold = tmp_path / "s.txt", tmp_path / "t.txt", tmp_path / "g.talp"
    src.write_text("a b c\nd e\n", encoding="utf-8")
    tgt.write_text("A B C\nD E\n", encoding="utf-8")
    gold.write_text("1-1 2-2 3-3\n1-1 2-2\n", encoding="utf-8")
    ckpts = [str(runs[a] / "checkpoints" / "best.ckpt") for a in ("global", "local_p")]
    files = ["--src", str(src), "--tgt", str(tgt), "--gold", str(gold), "--out", str(tmp_path)]
    res = run_here(["align", *ckpts, *files, "--member-conventions", "paper,predicted"])
    assert res.returncode == 0, res.stderr.decode()
    rep = json.loads((tmp_path / "align_ensemble.json").read_text())
    assert rep["convention"] == "per member: paper,predicted"
    assert rep["aer_by_convention"] == {rep["convention"]: rep["aer"]}
    one = run_here(["align", *ckpts, *files, "--member-conventions", "paper"])
    err = one.stderr.decode()
    assert one.returncode == 2
    assert "--member-conventions 'paper'" in err and "each of the 2 checkpoints" in err
    both = ["--member-conventions", "paper,paper", "--align-convention", "predicted"]
    res = run_here(["align", *ckpts, *files, *both])
    assert res.returncode == 2 and "not both" in res.stderr.decode()


def test_align_cli_writes_pharaoh_links_and_aer(runs, tmp_path):
    src, tgt, gold = tmp_path / "s.txt", tmp_path / "t.txt", tmp_path / "g.talp"
    src.write_text("a b c\nd e\n", encoding="utf-8")
    tgt.write_text("A B C\nD E\n", encoding="utf-8")
    gold.write_text("1-1 2-2 3-3\n1-1 2-2\n", encoding="utf-8")
    ckpt = runs["local_p"] / "checkpoints" / "best.ckpt"
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "luong_lit",
            "align",
            str(ckpt),
            "--src",
            str(src),
            "--tgt",
            str(tgt),
            "--gold",
            str(gold),
            "--baselines",
            "--out",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert res.returncode == 0, res.stderr
    links = (tmp_path / "alignments.txt").read_text().splitlines()
    assert [len(x.split()) for x in links] == [3, 2]  # one link per target word
    rep = json.loads((tmp_path / "align.json").read_text())
    assert 0.0 <= rep["aer"] <= 1.0 and rep["baselines"]["diagonal"] == pytest.approx(0.0)
    assert rep["aer_by_convention"]["paper"] == rep["aer"]
    assert set(rep["aer_by_convention"]) == {"paper", "predicted"}
    assert [(r["bucket"], r["n"], r["diagonal"]) for r in rep["aer_by_length"]] == [
        ("1-10", 2, pytest.approx(0.0))
    ]
    assert rep["tail_share"]["gold"] == 0.0  # no sentence longer than six words
    assert rep["link_offsets"]["diagonal"]["+0"] == pytest.approx(1.0)
    assert sum(rep["link_offsets"]["model"].values()) == pytest.approx(1.0)
    assert rep["baselines"]["diagonal, length-blind"] == pytest.approx(0.0)
    ens = [str(runs[a] / "checkpoints" / "best.ckpt") for a in ("global", "local_m", "local_p")]
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "luong_lit",
            "align",
            *ens,
            "--src",
            str(src),
            "--tgt",
            str(tgt),
            "--gold",
            str(gold),
            "--out",
            str(tmp_path / "ens"),
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert res.returncode == 0, res.stderr
    assert not (tmp_path / "ens" / "align.json").exists()  # a member's own file is not taken
    rep = json.loads((tmp_path / "ens" / "align_ensemble.json").read_text())
    links = (tmp_path / "ens" / "alignments_ensemble.txt").read_text().splitlines()
    assert len(rep["checkpoints"]) == 3 and [len(x.split()) for x in links] == [3, 2]


# ------------------------------------------------------------------ loggers and notebook
def test_wandb_offline_writes_a_run_and_needs_no_network(toy_corpus, tmp_path):
    pytest.importorskip("wandb")
    env = {
        **os.environ,
        "WANDB_MODE": "offline",
        "WANDB_BASE_URL": "http://127.0.0.1:9",
        "WANDB_INIT_TIMEOUT": "20",
        "OMP_NUM_THREADS": "1",
        "PYTHONWARNINGS": "ignore",
    }
    args = [a for a in tiny_overrides(toy_corpus) if not a.startswith("logger=")]
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "luong_lit.train",
            *args,
            "logger=wandb",
            "trainer.max_epochs=1",
            "callbacks.attention_heatmaps.every_n_epochs=1",
            f"hydra.run.dir={tmp_path}",
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert res.returncode == 0, res.stderr[-2000:]
    runs = list((tmp_path / "wandb").glob("offline-run-*"))
    assert len(runs) == 1 and list(runs[0].glob("run-*.wandb"))
    assert list((tmp_path / "attention").glob("*.png"))


def test_notebook_executes_headless(runs, tmp_path):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    nb = nbformat.read(REPO / "notebooks" / "analysis.ipynb", as_version=4)
    os.environ["LUONG_LIT_RUNS"] = ",".join(str(p) for p in runs.values())
    os.environ["LUONG_LIT_FIGURES"] = str(tmp_path / "figures")
    try:
        nbclient.NotebookClient(
            nb,
            timeout=300,
            kernel_name="python3",
            resources={"metadata": {"path": str(tmp_path)}},
        ).execute()
    finally:
        del os.environ["LUONG_LIT_RUNS"], os.environ["LUONG_LIT_FIGURES"]
    figures = {p.name for p in (tmp_path / "figures").glob("*.png")}
    assert figures == {
        "figure5_learning_curves.png",
        "figure6_bleu_by_length.png",
        "attention_side_by_side.png",
        "attention_own_sentence.png",  # drawn through luong_lit.load
    }


def test_runs_are_found_from_the_folder_jupyter_started_in_and_empty_patterns_named(runs, tmp_path):
    from luong_lit.analysis.notebook import find_runs

    project = tmp_path / "project"
    shutil.copytree(runs["global"], project / "logs" / "train" / "runs" / "2026-01-01_00-00-00")
    found = find_runs("logs/train/runs/*", folders=[tmp_path / "elsewhere", project])
    assert found == [project / "logs" / "train" / "runs" / "2026-01-01_00-00-00"]
    with pytest.raises(FileNotFoundError, match=r"matches nothing/\*.*looked up in: .*elsewhere"):
        find_runs("nothing/*", folders=[tmp_path / "elsewhere"])
    with pytest.warns(UserWarning, match="'nothing/\\*' matches no run directory"):
        assert find_runs(["logs/train/runs/*", "nothing/*"], folders=[project]) == found


def test_patterns_resolve_in_one_folder_only(runs, tmp_path, capsys):
    """The user's folder has single runs, the repository a sweep: the default patterns
    (runs and multiruns) must not add the repository's sweep to the user's runs."""
    from luong_lit.analysis.notebook import find_runs

    user, repo = tmp_path / "user", tmp_path / "repo"
    shutil.copytree(runs["global"], user / "logs" / "train" / "runs" / "a")
    shutil.copytree(runs["global"], repo / "logs" / "train" / "multiruns" / "s" / "0_x")
    patterns = ["logs/train/runs/*", "logs/train/multiruns/*/*"]
    assert find_runs(patterns, folders=[user, repo]) == [user / "logs/train/runs/a"]
    assert "no sweeps yet" in capsys.readouterr().out
    with pytest.warns(UserWarning, match="logs/other"):  # a pattern of the user's own: a warning
        find_runs(["logs/train/runs/*", "logs/other/*"], folders=[user, repo])
    assert find_runs(patterns, folders=[tmp_path / "none", repo]) == [
        repo / "logs/train/multiruns/s/0_x"
    ]


def test_figures_folder_is_relative_to_where_jupyter_started(monkeypatch, tmp_path):
    from luong_lit.analysis.notebook import figures_dir

    monkeypatch.setenv("PWD", str(tmp_path))
    monkeypatch.setenv("LUONG_LIT_FIGURES", "figs")
    assert figures_dir() == tmp_path.resolve() / "figs"
    monkeypatch.delenv("LUONG_LIT_FIGURES")
    assert figures_dir() == tmp_path.resolve() / "figures"
    monkeypatch.setenv("LUONG_LIT_FIGURES", str(tmp_path / "abs"))
    assert figures_dir() == tmp_path / "abs"


def test_figure5_says_which_set_it_plots():
    from luong_lit.analysis.figures import curve_label

    assert curve_label("val/nll_per_token").startswith("dev cost (NLL per token)")
    assert curve_label("test/ppl").startswith("test perplexity")


def test_readme_notebook_command_runs_on_the_main_jobs_run_directory(runs, tmp_path):
    """As pasted from the README in the folder where ``python -m luong_lit.train`` wrote
    ``logs/``: the notebook is written there, and run there."""
    pytest.importorskip("nbconvert")
    readme = (REPO / "README.md").read_text()
    line = next(x for x in readme.splitlines() if "jupyter nbconvert" in x).split("#")[0]
    run = tmp_path / "logs" / "train" / "runs" / "2026-01-01_00-00-00"
    shutil.copytree(runs["global"], run)
    env = {k: v for k, v in os.environ.items() if not k.startswith("LUONG_LIT_RUNS")}
    env["PWD"] = str(tmp_path)  # what a shell started in that folder passes on
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    res = subprocess.run(
        line, shell=True, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
    )
    assert res.returncode == 0, res.stderr[-3000:]
    html = next(tmp_path.glob("*.html")).read_text()
    assert "1 runs:" in html and "2026-01-01_00-00-00" in html
    figures = {p.name for p in (tmp_path / "figures").glob("*.png")}
    assert "figure5_learning_curves.png" in figures and "attention_side_by_side.png" in figures


def test_figure6_and_table6_say_what_they_read_or_what_is_missing(runs, tmp_path):
    from luong_lit.analysis.notebook import aer_table, buckets_source

    run = tmp_path / "run"
    shutil.copytree(runs["global"], run)
    assert buckets_source(run).startswith("dev set, greedy")
    assert "python -m luong_lit align" in aer_table([run])  # no AER: the command, not a bare table
    report = {"test": "test_2016_flickr", "decoding": {"beam": 5}, "length_buckets": []}
    (run / "eval_test_2016_flickr.json").write_text(json.dumps(report))
    assert buckets_source(run) == "test_2016_flickr, beam 5 (eval_test_2016_flickr.json)"
    rep = {"aer": 0.5, "aer_by_convention": {"paper": 0.5, "predicted": 0.8}}
    (run / "align.json").write_text(json.dumps({**rep, "unk_token_share": 0.05}))
    ens = {"aer": 0.4, "checkpoints": ["a", "b"], "baselines": {"diagonal": 0.7}}
    (run / "align_ensemble.json").write_text(json.dumps(ens))
    assert aer_table([run]).splitlines()[2:] == [
        "| global (general) | 0.500 | 0.800 | 5.0 % |",
        "| ensemble of 2 (with global (general)) | 0.400 |  |  |",
        "| diagonal | 0.700 | | |",
    ]
    (run / "align_ensemble.json").write_text(json.dumps({**ens, "convention": "per member: a,b"}))
    assert "| ensemble of 2 (with global (general)), per member: a,b | 0.400 |" in aer_table([run])


def test_the_paper_row_stands_beside_runs_of_its_own_corpus_only(runs, tmp_path):
    """Table 4's WMT'14 perplexity and BLEU beside a WMT'14 run, not beside another corpus's
    (that row says where the paper measured them); Table 6's AER is on one gold set for all."""
    from omegaconf import OmegaConf

    from luong_lit.analysis.runs import collect

    run = tmp_path / "wmt"
    shutil.copytree(runs["local_p"], run)
    cfg = OmegaConf.load(run / ".hydra" / "config.yaml")
    cfg.data.dataset = "wmt14_ende"
    OmegaConf.save(cfg, run / ".hydra" / "config.yaml")
    same, other = collect(run)["paper"], collect(runs["local_p"])["paper"]
    assert (same["ppl"], same["bleu"], same["row"]) == (5.9, 19.0, "local_p (general)")
    assert "ppl" not in other and other["aer"] == same["aer"] == 0.36
    assert other["row"] == "local_p (general) (measured on WMT'14 En→De; this run: files)"


def test_no_sweeps_yet_is_said_as_information_not_a_warning(runs, tmp_path, capsys, recwarn):
    from luong_lit.analysis.notebook import DEFAULT_RUNS, find_runs

    shutil.copytree(runs["global"], tmp_path / "logs" / "train" / "runs" / "2026-01-01_00-00-00")
    assert len(find_runs(DEFAULT_RUNS, folders=[tmp_path])) == 1
    assert not [w for w in recwarn if "matches no run directory" in str(w.message)]
    assert "no sweeps yet (logs/train/multiruns/*/* is empty" in capsys.readouterr().out
