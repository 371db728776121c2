"""The notebook's figures stay readable with 2, 8 and 20 runs that carry overrides: labels say
what varies between the cells (as ``report`` names them) and count seeds as seeds, the plots
keep their width beside any legend, one kind of curve per figure, panel titles that fit."""

from __future__ import annotations

import itertools
import json
import shutil
import subprocess
import warnings

import numpy as np
import pytest
import yaml
from conftest import REPO
from matplotlib.image import imread

from luong_lit.analysis import decoded, tables
from luong_lit.analysis.figures import attention_figure, plot_learning_curves
from luong_lit.metrics.buckets import plot_bleu_by_length

CONSTANT = ["++trainer.limit_test_batches=2", "++trainer.val_check_interval=5"]
SYSTEMS = list(itertools.product(["global", "local_m", "local_p"], ["dot", "general"]))
ROWS = [{"bucket": b, "n": 10, "bleu": 20.0 + i} for i, b in enumerate(["<10", "10-19", "20+"])]


def fake_run(run, overrides: list[str], num: int = 0, ppl: float | None = None):
    """A run directory as ``train`` leaves it, as far as the figures read it: its overrides,
    the saved config's system and seed, a short CSV log (and test results with ``ppl``)."""
    opts = dict(o.lstrip("+").split("=", 1) for o in overrides)
    net = {"attention": {"name": opts.get("attention", "global")}, "score": {"name": "general"}}
    net["score"]["name"] = opts.get("score", "general")
    cfg = {"seed": int(opts.get("seed", 1234)), "model": {"net": net}, "data": {"dataset": "files"}}
    (run / ".hydra").mkdir(parents=True)
    (run / ".hydra" / "config.yaml").write_text(yaml.safe_dump(cfg))
    (run / ".hydra" / "overrides.yaml").write_text(yaml.safe_dump(overrides))
    (run / "csv").mkdir()
    rows = [f"{e},{100 * (e + 1)},{5.0 - e / (num + 2)},{150 - e}" for e in range(4)]
    (run / "csv" / "metrics.csv").write_text(
        "epoch,step,val/nll_per_token,val/ppl\n" + "\n".join(rows) + "\n"
    )
    if ppl is not None:
        results = {"dev_ppl": ppl, "test": {"ppl": ppl, "bleu_greedy": 30.0 - ppl}}
        (run / "results.json").write_text(json.dumps(results))
    return run


def fake_sweep(root, n: int, constant=CONSTANT) -> list:
    """``n`` runs of a sweep over attention × score × dropout (seeds 1 and 2), every run with
    the same ``constant`` overrides."""
    runs, combos = [], itertools.product([0.0, 0.2, 0.3, 0.4], SYSTEMS, [1, 2])
    for num, (drop, (att, score), seed) in zip(range(n), combos):
        overrides = [*constant, f"attention={att}", f"score={score}", f"dropout={drop}"]
        runs.append(fake_run(root / f"{num}_job", [*overrides, f"seed={seed}"], num))
    return runs


def shape(path) -> tuple[int, int]:
    height, width = imread(str(path)).shape[:2]
    return height, width


def plot_share(path) -> float:
    """The share of a saved plot's width that its axes take: between the two columns of the
    longest black vertical lines (the left and right spines)."""
    dark = (imread(str(path))[..., :3] < 0.15).all(-1)
    best, run = np.zeros(dark.shape[1], int), np.zeros(dark.shape[1], int)
    for row in dark:
        run = np.where(row, run + 1, 0)
        best = np.maximum(best, run)
    spines = np.flatnonzero(best >= 0.8 * best.max())
    return (spines.max() - spines.min()) / dark.shape[1]


@pytest.mark.parametrize("n", [2, 8, 20])
def test_the_figures_of_a_sweep_with_overrides_stay_readable(tmp_path, n):
    cells = tables.with_seeds(tables.cells(fake_sweep(tmp_path / "sweep", n)))
    labels = list(cells)
    assert len(set(labels)) == len(labels)  # what differs, said
    assert not any("++trainer" in label for label in labels)  # not what every run shares
    fig5 = plot_learning_curves(cells, tmp_path / "fig5.png")
    h5, w5 = shape(fig5)
    assert 500 <= w5 <= 1100 and 350 <= h5 <= 1700  # the plot keeps its size, the legend under
    fig6 = plot_bleu_by_length(dict.fromkeys(labels, ROWS), tmp_path / "fig6.png")
    h6, w6 = shape(fig6)
    assert 500 <= w6 <= 1100 and 350 <= h6 <= 1700
    src, tgt = [f"s{i}" for i in range(12)], [f"t{i}" for i in range(10)]
    panels = [(label, np.random.default_rng(0).random((10, 12))) for label in labels]
    fig = attention_figure(panels, src, tgt)
    width, height = fig.get_size_inches()
    panel = width / min(len(labels), 4)
    assert panel < 6 and width <= 4 * panel + 1e-6  # at most four panels a row, then another
    assert len(fig.axes) == min(len(labels), 4) * -(-len(labels) // 4) and height < 5 * len(
        fig.axes
    )
    titles = [ax.get_title().replace("\n", " ") for ax in fig.axes if ax.get_title()]
    assert titles == labels


def test_labels_name_what_varies_between_the_cells_and_count_seeds(tmp_path):
    """As ``report`` names its cells: the overrides that differ between cells, not those all
    share (nor the system again); a cell's seeds counted, a seed run twice once."""
    shared = [*CONSTANT, "model.net.init_state=copy", "score=general"]
    runs = [
        fake_run(tmp_path / f"{i}", [*shared, f"attention={att}", f"dropout={d}", f"seed={s}"])
        for i, (att, d, s) in enumerate(
            [("global", 0.2, 1), ("global", 0.2, 2), ("global", 0.3, 1), ("local_p", 0.2, 1)]
        )
    ]
    again = [*shared, "attention=global", "dropout=0.3", "seed=1"]  # the third run's recipe
    runs.append(fake_run(tmp_path / "again", again))
    assert list(tables.with_seeds(tables.cells(runs))) == [
        "attention=global dropout=0.2, 2 seeds",
        "attention=global dropout=0.3, 1 seed (2 runs)",
        "attention=local_p dropout=0.2",
    ]
    assert list(tables.cells(runs[:2])) == ["global (general)"]  # one cell: its system


def test_the_same_recipe_and_seed_run_twice_is_one_seed_in_table4(tmp_path):
    """Two runs of one seed are not two seeds: no sd of 0.00 beside them, and said so."""
    runs = [
        fake_run(tmp_path / "a", ["attention=global", "seed=1"], ppl=5.0),
        fake_run(tmp_path / "b", ["attention=global", "seed=1"], ppl=5.0),
        fake_run(tmp_path / "c", ["attention=local_p", "seed=1"], ppl=6.0),
        fake_run(tmp_path / "d", ["attention=local_p", "seed=2"], ppl=7.0),
    ]
    rows = [line.split(" | ") for line in tables.table4(runs).splitlines()[2:]]
    assert rows[0][:5] == ["| attention=global", "global (general)", "2 (1 seed)", "5.00", "5.00"]
    assert rows[1][2:4] == ["2", "6.50 ± 0.71"]


def test_figure6_draws_one_kind_of_source_per_figure(tmp_path, monkeypatch):
    """A run read from its test-set report and runs read greedily on the dev set are never
    lines of one figure: a figure for each, titled by what it reads, seeds counted in each."""
    import luong_lit.metrics.buckets as buckets

    runs = [fake_run(tmp_path / f"r{i}", [f"attention={a}", f"seed={s}"]) for i, (a, s) in
            enumerate([("global", 1), ("global", 2), ("global", 3), ("local_p", 1)])]  # fmt: skip
    for run in runs:
        (run / "checkpoints").mkdir()
        (run / "checkpoints" / "best.ckpt").write_bytes(b"")
    report = {"test": "newstest", "decoding": {"beam": 5}, "length_buckets": ROWS}
    (runs[0] / "eval_newstest.json").write_text(json.dumps(report))
    monkeypatch.setattr(decoded, "length_buckets", lambda run, n=None: ROWS)
    drawn = []
    monkeypatch.setattr(
        buckets, "plot_bleu_by_length", lambda s, p, title: drawn.append((title, list(s))) or p
    )
    paths = decoded.figure6(tables.cells(runs), tmp_path)
    assert [p.name for p in paths] == ["figure6_bleu_by_length.png", "figure6_bleu_by_length_2.png"]
    title = "Figure 6: BLEU by source length"
    assert drawn == [
        (f"{title} (newstest, beam 5)", ["attention=global"]),
        (f"{title} (dev set, greedy)", ["attention=global, 2 seeds", "attention=local_p"]),
    ]


def test_long_labels_leave_the_plots_most_of_the_width(tmp_path):
    """Labels of long overrides: the legend wraps and takes fewer columns under the plot, the
    figure does not widen around it."""
    long = [f"model.net.init_state=copy optim.lr={lr} trainer.gradient_clip_val=5" for lr in
            (0.1, 0.5, 1.0, 2.0, 3.0, 4.0)]  # fmt: skip
    run = fake_run(tmp_path / "run", ["seed=1"])
    for path in (
        plot_learning_curves(dict.fromkeys(long, run), tmp_path / "fig5.png"),
        plot_bleu_by_length(dict.fromkeys(long, ROWS), tmp_path / "fig6.png"),
    ):
        height, width = shape(path)
        assert width <= 1100 and 0.5 <= height / width <= 2.0, (path.name, width, height)
        assert plot_share(path) >= 0.6, path.name


def test_attention_panel_titles_fit_their_panels():
    """Titles as long as a sweep's labels wrap to their panel: none runs into its neighbour's
    nor off the figure."""
    labels = [f"attention=local_p dropout=0.{i} score=general model.net.init_state=copy, 2 seeds"
              for i in range(6)]  # fmt: skip
    panels = [(label, np.full((3, 3), 1 / 3)) for label in labels]
    fig = attention_figure(panels, ["a", "b", "c"], ["A", "B", "C"])
    renderer = fig.canvas.get_renderer()
    boxes = [ax.title.get_window_extent(renderer) for ax in fig.axes if ax.get_title()]
    assert len(boxes) == len(labels)
    assert all(0 <= b.x0 and b.x1 <= fig.bbox.width for b in boxes)
    assert not any(a.overlaps(b) for a, b in itertools.combinations(boxes, 2))


def test_the_shipped_notebook_is_valid_without_warnings():
    nbformat = pytest.importorskip("nbformat")
    text = (REPO / "notebooks" / "analysis.ipynb").read_text(encoding="utf-8")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        nbformat.validate(nbformat.reads(text, as_version=4))


def test_the_notebook_written_at_the_repository_root_is_ignored_by_git(tmp_path):
    """``python -m luong_lit notebook`` writes analysis.ipynb where it is run, and nbconvert
    analysis.html beside it; the shipped notebook stays tracked. Read by git from the
    project's .gitignore in a repository of its own, so that a copy without .git checks it too."""
    shutil.copy(REPO / ".gitignore", tmp_path / ".gitignore")
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    check = ["git", "check-ignore", "-q", "--no-index"]
    for name in ("analysis.ipynb", "analysis.html"):
        assert subprocess.run([*check, name], cwd=tmp_path).returncode == 0, name
    assert subprocess.run([*check, "notebooks/analysis.ipynb"], cwd=tmp_path).returncode == 1
