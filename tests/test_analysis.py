"""``luong_lit.analysis``: runs beside the paper's tables (``report``), figures, and the analysis
notebook run headless."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO
from omegaconf import OmegaConf

# ------------------------------------------------------------------ tiny runs


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


def test_a_run_without_a_csv_log_is_skipped_and_named(runs, tmp_path, capsys):
    """A ``logger=wandb`` run (or one stopped before its first log) has no csv/metrics.csv:
    Figure 5 leaves it out and says so in one line."""
    from luong_lit.analysis.figures import plot_learning_curves, read_metrics
    from luong_lit.errors import DataError

    run = tmp_path / "wandb_run"
    shutil.copytree(runs["global"], run, ignore=shutil.ignore_patterns("*.csv"))
    two = {"csv": runs["global"], "wandb": run}
    assert plot_learning_curves(two, tmp_path / "fig5.png").stat().st_size > 1000
    why = "no csv/metrics.csv (a run logged elsewhere or stopped before its first log)"
    assert f"skipped wandb_run: {why}" in capsys.readouterr().out.splitlines()
    with pytest.raises(DataError, match="wandb_run: no csv/metrics.csv"):
        read_metrics(run)
