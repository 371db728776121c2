"""``luong_lit.analysis``: runs beside the paper's tables (``report``), figures, and the analysis
notebook run headless."""

from __future__ import annotations

import functools
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from conftest import REPO, compose_cfg, run_here, saved_run, write_corpus
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
    other = "Table 4: local_p (general) (measured on WMT'14 En→De; this run: files)"
    other += " | 5.9 | 19.0 | 20.9 |"
    assert "| local_p | general |" in lines[4] and f"{other} 0.36 |" in lines[4]
    res = subprocess.run(
        [sys.executable, "-m", "luong_lit", "report", str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert res.returncode == 2 and "not a luong_lit run directory" in res.stderr


def _outputs(nb) -> str:
    """Everything the executed notebook's cells printed or displayed, as text."""
    texts = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            texts += [
                out.get("text", ""),
                data.get("text/markdown", ""),
                data.get("text/plain", ""),
            ]
    return "\n".join(texts)


def test_notebook_executes_headless(runs, tiny_ladder, tmp_path):
    """With the Table 4 runs, a two-row Table 1 ladder and a run stopped before its first log
    (no csv/metrics.csv, no checkpoint): every figure is drawn, the stopped run named."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    nb = nbformat.read(REPO / "notebooks" / "analysis.ipynb", as_version=4)
    stopped = tmp_path / "stopped"
    shutil.copytree(runs["local_p"], stopped, ignore=shutil.ignore_patterns("*.csv", "*.ckpt"))
    listed = [*runs.values(), *tiny_ladder.values(), stopped]
    os.environ["LUONG_LIT_RUNS"] = ",".join(str(p) for p in listed)
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
        "figure5_table1_ladder.png",  # Figure 5 and 6 of the Table 1 ladder
        "figure6_table1_ladder.png",
        "attention_side_by_side.png",
        "attention_own_sentence.png",  # drawn through luong_lit.load
    }
    text = _outputs(nb)
    title = "### Table 1 (§4.2): ours on files (toy), recipe ours (m30k_small: 2×256, Adam, the "
    assert title + "main job's additions); the paper's on WMT'14 En→De" in text
    assert (
        "| + reverse | files (toy) | 1 |" in text
        and "| + dropout | files (toy) | not run yet |" in text
    )
    assert "No Table 3 ladder run among the runs" in text
    assert "skipped stopped: no csv/metrics.csv (a run logged elsewhere" in text
    assert "skipped stopped: no checkpoint" in text


def test_runs_are_found_from_the_folder_jupyter_started_in_and_empty_patterns_named(runs, tmp_path):
    from luong_lit.analysis.discovery import find_runs

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
    from luong_lit.analysis.discovery import find_runs

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
    from luong_lit.analysis.discovery import figures_dir

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
    from luong_lit.analysis.decoded import buckets_source
    from luong_lit.analysis.tables import aer_table

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
    """Table 4's WMT'14 perplexity and BLEU beside every run, a run of another corpus's naming
    where the paper measured them; Table 6's AER is on one gold set for all."""

    from luong_lit.analysis.runs import collect

    run = tmp_path / "wmt"
    shutil.copytree(runs["local_p"], run)
    cfg = OmegaConf.load(run / ".hydra" / "config.yaml")
    cfg.data.dataset = "wmt14_ende"
    OmegaConf.save(cfg, run / ".hydra" / "config.yaml")
    same, other = collect(run).paper, collect(runs["local_p"]).paper
    assert (same["ppl"], same["bleu"], same["row"]) == (5.9, 19.0, "local_p (general)")
    assert (other["ppl"], other["bleu"]) == (5.9, 19.0) and other["aer"] == same["aer"] == 0.36
    assert other["row"] == "local_p (general) (measured on WMT'14 En→De; this run: files)"


def test_no_sweeps_yet_is_said_as_information_not_a_warning(runs, tmp_path, capsys, recwarn):
    from luong_lit.analysis.discovery import DEFAULT_RUNS, find_runs

    shutil.copytree(runs["global"], tmp_path / "logs" / "train" / "runs" / "2026-01-01_00-00-00")
    assert len(find_runs(DEFAULT_RUNS, folders=[tmp_path])) == 1
    assert not [w for w in recwarn if "matches no run directory" in str(w.message)]
    assert "no sweeps yet (logs/train/multiruns/*/* is empty" in capsys.readouterr().out


# ------------------------------------------------------------------ the ladders (Tables 1 and 3)


@pytest.fixture(scope="session")
def tiny_ladder(toy_corpus, tmp_path_factory) -> dict[str, Path]:
    """Two rows of Table 1's ladder, Base and + reverse, each trained for two epochs on the toy
    corpus with a test set, as a sweep's run directories: ``{ladder: run directory}``."""
    sweep = tmp_path_factory.mktemp("ladder")
    test = write_corpus(tmp_path_factory.mktemp("ladder_data"), "test", 10, 3)
    extra = ["trainer.max_epochs=2", "logger=csv", f"+data.test.toy.src={test['src']}",
             f"+data.test.toy.tgt={test['tgt']}"]  # fmt: skip
    runs = {}
    for num, ladder in enumerate(("table1_base", "table1_reverse")):
        run = sweep / f"{num}_{ladder}_seed1234"  # Hydra reads no "=" in paths.output_dir
        runs[ladder] = saved_run(run, toy_corpus, [f"ladder={ladder}", "seed=1234"], extra)
    return runs


@functools.cache
def ladder_config(ladder: str) -> str:
    """The ladder row's composed config (``conf/ladder/``), as YAML."""
    with tempfile.TemporaryDirectory() as out:  # Hydra reads no "=" in paths.output_dir
        return OmegaConf.to_yaml(compose_cfg([f"ladder={ladder}"], Path(out)))


def ladder_run(sweep: Path, num: int, ladder: str, seed: int, numbers=None) -> Path:
    """A ladder run as a sweep leaves it: its Multi30k config, and test results with
    ``numbers`` (test ppl, greedy, beam, beam after unk replacement; None: not finished)."""
    run = sweep / f"{num}_ladder={ladder},seed={seed}"
    (run / ".hydra").mkdir(parents=True)
    cfg = OmegaConf.create(ladder_config(ladder))
    cfg.seed = seed
    OmegaConf.save(cfg, run / ".hydra" / "config.yaml")
    (run / ".hydra" / "overrides.yaml").write_text(f"- ladder={ladder}\n- seed={seed}\n")
    if numbers:
        test = dict(zip(("ppl", "bleu_greedy", "bleu_beam", "bleu_unk_beam"), numbers))
        results = {"checkpoint": "best.ckpt", "dev_ppl": numbers[0], "test_2016_flickr": test}
        (run / "results.json").write_text(json.dumps(results))
    return run


def table_rows(markdown: str) -> dict[str, list[str]]:
    """A ladder table's rows by their paper row: the cells of each."""
    rows = [
        [c.strip() for c in line.strip().strip("|").split("|")] for line in markdown.splitlines()
    ]
    return {r[0]: r for r in rows if len(r) == 16 and r[0] not in ("paper row", "---")}


def results_of(sweep: Path, ladder: str, key: str) -> list[float]:
    """``key`` of each finished run of ``ladder``, read back from its results.json."""
    files = sorted(sweep.glob(f"*_ladder={ladder},*/results.json"))
    return [json.loads(f.read_text())["test_2016_flickr"][key] for f in files]


# means 21.004 and 24.006: printed 21.00 and 24.01, a gain of +3.00 (not 24.01 - 21.00 = 3.01)
LADDER = {
    ("table1_base", 1234): (10.0, 20.0, 20.504, 20.504),
    ("table1_base", 2): (12.5, 21.5, 21.504, 21.504),
    ("table1_reverse", 1234): (9.0, 23.0, 23.006, 23.006),
    ("table1_reverse", 2): (9.5, 22.0, 25.006, 25.006),
    ("table1_local_p_general", 1234): (6.0, 30.0, 31.0, 32.5),
    ("table1_local_p_general", 2): (6.5, 29.0, 31.5, 33.25),
}


def test_report_lays_out_a_ladder_with_its_gains_beside_the_paper(tmp_path):
    sweep = tmp_path / "sweep"
    for num, ((ladder, seed), numbers) in enumerate(LADDER.items()):
        ladder_run(sweep, num, ladder, seed, numbers)
    ladder_run(sweep, 6, "table1_dropout", 1234)  # started, not finished
    members = [str(p / "checkpoints" / "best.ckpt") for p in sorted(sweep.glob("[45]_*"))]
    bleu = {"bleu": {"bleu_tok": 34.0}, "bleu_unk_replaced": {"bleu_tok": 35.5}}
    ensemble = {"test": "test_2016_flickr", "checkpoints": members, "ppl": [6.0], **bleu}
    (tmp_path / "ens.json").write_text(json.dumps(ensemble))
    res = run_here(["report", str(sweep), "--ensemble", str(tmp_path / "ens.json")])
    assert res.returncode == 0, res.stderr.decode()
    out = res.stdout.decode()
    rows = table_rows(out)
    assert list(rows) == ["Base", "+ reverse", "+ dropout", "+ global attention (location)",
                          "+ feed input", "+ local-p (general) + feed input", "+ unk replace",
                          "Ensemble 8 models + unk replace"]  # fmt: skip
    of, sd = functools.partial(results_of, sweep), statistics.stdev
    base, rev = of("table1_base", "bleu_beam"), of("table1_reverse", "bleu_beam")
    assert rows["Base"][6] == f"{statistics.fmean(base):.2f} ± {sd(base):.2f}" == "21.00 ± 0.71"
    dev = [
        json.loads(f.read_text())["dev_ppl"]
        for f in sorted(sweep.glob("*_ladder=table1_base,*/results.json"))
    ]
    assert rows["Base"][3] == f"{statistics.fmean(dev):.2f} ± {sd(dev):.2f}" == "11.25 ± 1.77"
    diff, spread = statistics.fmean(rev) - statistics.fmean(base), math.hypot(sd(base), sd(rev))
    assert rows["+ reverse"][9] == f"{diff:+.2f} ± {spread:.2f} (beam)" == "+3.00 ± 1.58 (beam)"
    assert rows["+ reverse"][15] == "+1.3" and rows["+ reverse"][14] == "12.6"
    assert [rows["+ dropout"][2], rows["+ dropout"][9]] == ["not run yet", "–"]
    assert rows["+ local-p (general) + feed input"][9] == "–"  # the row above is not run yet
    beam, unk = (
        of("table1_local_p_general", "bleu_beam"),
        of("table1_local_p_general", "bleu_unk_beam"),
    )
    own = [u - b for u, b in zip(unk, beam, strict=True)]  # each run's own gain: paired
    assert rows["+ unk replace"][9] == f"{statistics.fmean(own):+.2f} ± {sd(own):.2f} (beam)"
    assert rows["+ unk replace"][9] == "+1.62 ± 0.18 (beam)"  # not ± hypot(sds) = 0.64
    assert rows["Ensemble 8 models + unk replace"][2] == "ensemble of 2"
    ens_gain = 35.5 - statistics.fmean(unk)  # one system: only the seeds' sd of the row above
    assert rows["Ensemble 8 models + unk replace"][9] == f"{ens_gain:+.2f} ± {sd(unk):.2f} (beam)"
    best = f'Its gain over the best single run of "+ unk replace" ({max(unk):.2f}): +2.25.'
    assert best in out and max(unk) == 33.25
    assert {r[1] for r in rows.values()} == {"Multi30k En→De (test_2016_flickr)"}
    assert {r[12] for r in rows.values()} == {"WMT'14 En→De newstest2014"}
    assert "Not finished (no test results yet): 6_ladder=table1_dropout,seed=1234." in out
    assert "### Table 3" not in out and "| cell |" not in out  # no other runs: no other table


def test_an_ensemble_is_found_beside_the_runs_or_named_with_its_table(tmp_path):
    from luong_lit.analysis.runs import collect
    from luong_lit.errors import DataError
    from luong_lit.study.ensembles import find_ensembles

    run = ladder_run(tmp_path, 0, "table3_base_reverse", 1234, (9.0, 20.0, 21.0, 21.0))
    row = collect(run)  # a ladder run is given its row of the paper
    assert (row.ladder, row.paper["table"]) == ("table3_base_reverse", "3")
    assert row.paper["row"] == "Base (reverse) (measured on WMT'15 De→En; this run: multi30k)"
    report = {"test": "t", "checkpoints": [str(run / "checkpoints" / "best.ckpt")], "ppl": [9.0],
              "bleu": {"bleu_tok": 21.0}, "bleu_unk_replaced": {"bleu_tok": 21.5}}  # fmt: skip
    (tmp_path / "e.json").write_text(json.dumps(report))
    assert list(find_ensembles([], [str(tmp_path / "e.json")])) == ["table3"]  # its runs' ladder
    assert list(find_ensembles([], [f"table1={tmp_path / 'e.json'}"])) == ["table1"]
    shutil.copy(tmp_path / "e.json", tmp_path / "ensemble_table1.json")
    assert find_ensembles([tmp_path])["table1"].beam_unk.bleu_tok == 21.5
    (tmp_path / "e.json").write_text(json.dumps({**report, "checkpoints": ["elsewhere/best.ckpt"]}))
    with pytest.raises(DataError, match="name its table"):
        find_ensembles([], [str(tmp_path / "e.json")])
    (tmp_path / "bad.json").write_text("{}")
    res = run_here(["report", str(tmp_path), "--ensemble", str(tmp_path / "bad.json")])
    assert (
        res.returncode == 2
        and "not a report of `python -m luong_lit evaluate`" in res.stderr.decode()
    )
    assert len(res.stderr.decode().strip().splitlines()) == 1


def test_the_paper_gains_are_the_ones_tables_1_and_3_print():
    from luong_lit.study.ladders import lay_out, markdown_ladder

    printed = {"table1": ["–", "+1.3", "+1.4", "+2.8", "+1.3", "+0.9", "+1.9", "+2.1"],
               "table3": ["–", "+2.2", "+1.0", "+2.7", "+2.1"]}  # fmt: skip
    for table, gains in printed.items():
        rows = table_rows(markdown_ladder(table, lay_out([], table))).values()
        assert [r[15] for r in rows] == gains
        assert {r[2] for r in rows} == {"not run yet"}


def test_report_of_a_trained_two_row_ladder(tiny_ladder):
    sweep = tiny_ladder["table1_base"].parent
    res = run_here(["report", str(sweep)])
    assert res.returncode == 0, res.stderr.decode()
    rows = table_rows(res.stdout.decode())
    found = {
        k: json.loads((run / "results.json").read_text())["toy"] for k, run in tiny_ladder.items()
    }
    base, rev = found["table1_base"], found["table1_reverse"]
    assert rows["Base"][4] == f"{base['ppl']:.2f}" and rows["+ reverse"][4] == f"{rev['ppl']:.2f}"
    dev = {
        k: json.loads((run / "results.json").read_text())["dev_ppl"]
        for k, run in tiny_ladder.items()
    }
    assert rows["Base"][3] == f"{dev['table1_base']:.2f}"  # one seed: no spread
    kind = "beam" if "bleu_beam" in base else "greedy"
    diff = rev[f"bleu_{kind}"] - base[f"bleu_{kind}"]
    assert rows["+ reverse"][9] == f"{diff:+.2f} ({kind})"  # one seed a row: no spread
    assert rows["+ dropout"][2] == "not run yet" and rows["Base"][1] == "files (toy)"


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


def test_figure6_of_a_ladder_reads_every_row_from_one_kind_of_source(tmp_path, capsys):
    """Where some runs have an evaluate report (test set, beam), a run without one is left out
    and named rather than read greedily from the dev set beside them."""
    from luong_lit.study.ladder_views import one_source

    a, b, c = (tmp_path / n for n in ("a", "b", "c"))
    for run in (a, b, c):
        run.mkdir()
    rows = {"Base, 2 seeds": [a, b], "+ reverse": [c]}
    assert one_source(rows) == rows  # no reports: all of them, greedy on the dev set
    for run in (a, c):
        (run / "eval_test.json").write_text("{}")
    (b / "eval_test_ensemble.json").write_text("{}")  # an ensemble's report is not b's own
    assert one_source(rows) == {"Base": [a], "+ reverse": [c]}
    assert "skipped b: no evaluate report" in capsys.readouterr().out


def test_a_report_of_two_recipes_sweeps_gives_a_table_for_each(tmp_path):
    """The same rows trained on ``m30k_small`` and on ``m30k_paper`` are two ladders, their
    seeds never pooled across recipes."""
    ours, paper = tmp_path / "ours", tmp_path / "paper"
    ladder_run(ours, 0, "table1_base", 1234, (9.0, 20.0, 21.0, 21.0))
    run = ladder_run(paper, 0, "table1_base", 1234, (25.0, 6.0, 7.0, 7.0))
    (run / ".hydra" / "overrides.yaml").write_text(
        "- experiment=m30k_paper\n- ladder=table1_base\n- seed=1234\n"
    )
    res = run_here(["report", str(ours), str(paper)])
    assert res.returncode == 0, res.stderr.decode()
    out = res.stdout.decode()
    titles = [line for line in out.splitlines() if line.startswith("### Table 1")]
    assert len(titles) == 2 and "recipe ours" in titles[0] and "recipe the paper's" in titles[1]
    bases = [line for line in out.splitlines() if line.startswith("| Base |")]
    assert [b.split("|")[7].strip() for b in bases] == ["21.00", "7.00"]  # one run each


def test_runs_of_one_row_with_another_recipe_override_are_not_pooled_as_seeds(tmp_path):
    """``model.net.init_state=copy`` on the same rows is another recipe: its own table, titled
    with the override; run-only overrides (threads, callbacks) do not split a recipe."""
    ours, copy = tmp_path / "ours", tmp_path / "copy"
    run = ladder_run(ours, 0, "table1_base", 1234, (9.0, 20.0, 21.0, 21.0))
    (run / ".hydra" / "overrides.yaml").write_text(
        "- ladder=table1_base\n- seed=1234\n- threads=1\n"
    )
    run = ladder_run(copy, 0, "table1_base", 1234, (9.5, 19.0, 20.0, 20.0))
    (run / ".hydra" / "overrides.yaml").write_text(
        "- ladder=table1_base\n- model.net.init_state=copy\n- seed=1234\n"
        "- callbacks.beam_bleu.on_test=false\n"
    )
    res = run_here(["report", str(ours), str(copy)])
    assert res.returncode == 0, res.stderr.decode()
    titles = [line for line in res.stdout.decode().splitlines() if line.startswith("### Table")]
    assert len(titles) == 2, titles
    assert "with" not in titles[0] and "with model.net.init_state=copy;" in titles[1]


def test_seeds_trained_on_a_gpu_and_on_a_cpu_are_one_recipe_and_the_title_says_so(tmp_path):
    """``trainer=gpu`` chooses the hardware, not the recipe: its run is a seed of the CPU run's
    row, and the table's title counts the runs trained on a GPU."""
    ladder_run(tmp_path, 0, "table1_base", 1234, (9.0, 20.0, 21.0, 21.0))
    gpu = ladder_run(tmp_path, 1, "table1_base", 2, (9.0, 20.0, 23.0, 23.0))
    cfg = OmegaConf.load(gpu / ".hydra" / "config.yaml")
    cfg.trainer.accelerator = "gpu"
    OmegaConf.save(cfg, gpu / ".hydra" / "config.yaml")
    overrides = "- ladder=table1_base\n- seed=2\n- trainer=gpu\n"
    (gpu / ".hydra" / "overrides.yaml").write_text(overrides)
    res = run_here(["report", str(tmp_path)])
    assert res.returncode == 0, res.stderr.decode()
    out = res.stdout.decode()
    titles = [line for line in out.splitlines() if line.startswith("### Table")]
    assert len(titles) == 1 and "runs trained on a GPU: 1 of 2;" in titles[0], titles
    assert "with" not in titles[0]
    assert table_rows(out)["Base"][2] == "2" and table_rows(out)["Base"][6] == "22.00 ± 1.41"
    cfg.trainer.accelerator = "cpu"
    OmegaConf.save(cfg, gpu / ".hydra" / "config.yaml")
    out = run_here(["report", str(tmp_path)]).stdout.decode()
    assert "GPU" not in next(line for line in out.splitlines() if line.startswith("### Table"))


def test_figure6_of_a_ladder_draws_its_ensembles_line(tmp_path, monkeypatch):
    """The ensemble in ``ensemble_table1/`` beside the runs is a line of its own, read from its
    ``evaluate`` report's buckets; without one, only the rows' lines."""
    import luong_lit.metrics.buckets as buckets
    from luong_lit.study.ladder_views import figure6_ladder

    def report(folder: Path, name: str, bleu: float, checkpoints=()) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        rows = [{"bucket": "<10", "n": 3, "bleu": bleu}, {"bucket": "10-19", "n": 2, "bleu": bleu}]
        rep = {"test": "t", "decoding": {"beam": 5}, "length_buckets": rows}
        rep.update(bleu={"bleu_tok": bleu}, bleu_unk_replaced={"bleu_tok": bleu}, ppl=[5.0])
        (folder / name).write_text(json.dumps({**rep, "checkpoints": list(checkpoints)}))

    runs = [
        ladder_run(tmp_path, 0, "table1_base", 1234, (9.0, 20.0, 21.0, 21.0)),
        ladder_run(tmp_path, 1, "table1_local_p_general", 1234, (5.0, 30.0, 31.0, 31.0)),
    ]
    for run, bleu in zip(runs, (21.0, 31.0)):
        report(run, "eval_t.json", bleu)
    seen = []
    monkeypatch.setattr(buckets, "plot_bleu_by_length", lambda s, p, title: seen.append(s) or p)
    figure6_ladder(runs, tmp_path / "f6.png")
    ckpts = [str(runs[1] / "checkpoints" / "best.ckpt")] * 2
    report(tmp_path / "ensemble_table1", "eval_t_ensemble.json", 33.0, ckpts)
    figure6_ladder(runs, tmp_path / "f6.png")
    assert len(seen[0]) == 2 and len(seen[1]) == 3
    label, line = list(seen[1].items())[-1]
    assert label.startswith("ensemble of 2") and [r["bleu"] for r in line] == [33.0, 33.0]
