"""Pictures: attention heatmaps, learning curves (Figure 5) and run-log reading.

Pure functions that write files; the training callbacks, the notebook and the report share them.
"""

from __future__ import annotations

import csv
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from luong_lit.decoding.forced import forced_attention
from luong_lit.decoding.unk import alignment_rows
from luong_lit.errors import DataError
from luong_lit.metrics.plotting import file_figure, pyplot, save_with_legend, wrap_to


def draw_attention(
    ax, weights: np.ndarray, src: Sequence[str], tgt: Sequence[str], title: str = ""
) -> None:
    """Target words down, source words across; darker is more weight (Figure 7 style)."""
    ax.imshow(weights, cmap="Greys", vmin=0.0, vmax=max(float(weights.max()), 1e-6), aspect="auto")
    ax.set_xticks(range(len(src)), src, rotation=90, fontsize=7)
    ax.set_yticks(range(len(tgt)), tgt, fontsize=7)
    ax.tick_params(length=0)
    if title:
        fit_title(ax, title)


#: the font size of a panel's title, in points
TITLE_SIZE = 9


def fit_title(ax, title: str, fontsize: float = TITLE_SIZE) -> None:
    """``title`` over ``ax``, wrapped onto as many lines as it takes to be no wider than the
    axes: side-by-side panels' titles never run into each other."""
    renderer = ax.figure.canvas.get_renderer()
    room = ax.get_window_extent(renderer).width
    chars = len(title)
    while True:
        text = ax.set_title(wrap_to(title, chars), fontsize=fontsize)
        if chars <= 8 or text.get_window_extent(renderer).width <= room:
            return
        chars = int(chars * 0.85)


#: panels of an attention figure side by side before it wraps to another row
PANELS_PER_ROW = 4


def attention_figure(
    panels: Sequence[tuple[str, np.ndarray]], src: Sequence[str], tgt: Sequence[str]
):
    """One heatmap per (title, weights (len(tgt), len(src))) panel, in rows of at most
    :data:`PANELS_PER_ROW`, so that many runs stay as readable as two; each title wrapped to
    its panel's width (:func:`fit_title`, once the panels are laid out)."""
    w = max(3.0, 0.28 * len(src) + 1.5)
    h = max(2.5, 0.28 * len(tgt) + 1.5)
    cols = min(len(panels), PANELS_PER_ROW)
    rows = -(-len(panels) // cols)
    fig = file_figure((w * cols, h * rows))  # drawn in any thread (the training callback's)
    axes = fig.subplots(rows, cols, squeeze=False)
    for ax in axes.flat[len(panels) :]:
        ax.set_axis_off()
    for ax, (_, weights) in zip(axes.flat, panels):
        draw_attention(ax, np.asarray(weights), src, tgt)
    fig.tight_layout()
    for ax, (title, _) in zip(axes.flat, panels):
        fit_title(ax, title)
    fig.tight_layout()
    return fig


def heatmap_panels(models: dict, src_ids, tgt_ids) -> list[tuple[str, np.ndarray]]:
    """``(title, rows)`` per model for one sentence pair: side-by-side comparisons."""
    panels = []
    for name, net in models.items():
        att = forced_attention(net, [src_ids], [tgt_ids])[0]
        panels.append((name, alignment_rows(att, len(tgt_ids), net.content_based).numpy()))
    return panels


def save_attention(panels, src, tgt, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    attention_figure(panels, src, tgt).savefig(path, dpi=110)
    return path


NO_LOG = "no csv/metrics.csv (a run logged elsewhere or stopped before its first log)"


def logged(runs: Sequence[str | Path]) -> list[Path]:
    """The runs that have a CSV log (``csv/metrics.csv``, what Figure 5 reads); each other run
    (a ``logger=wandb`` run, a run stopped before its first log) is named in one line."""
    kept = []
    for run in map(Path, runs):
        if any(run.glob("**/metrics.csv")):
            kept.append(run)
        else:
            print(f"skipped {run.name}: {NO_LOG}")
    return kept


def read_metrics(run_dir: str | Path) -> dict[str, list[tuple[int, float]]]:
    """``metric -> [(step, value), ...]`` from a run's CSV log (``csv/metrics.csv``), each at
    the optimizer steps done when it was logged: the step the run's own lines name ("epoch 2
    validated at step 24"; Lightning's CSV writes the row of that step's batch, 23)."""
    run_dir = Path(run_dir)
    files = sorted(run_dir.glob("**/metrics.csv"))
    if not files:
        raise DataError(f"{run_dir}: {NO_LOG}")
    out: dict[str, list[tuple[int, float]]] = {}
    with open(files[-1], newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            for key, value in row.items():
                if key in ("epoch", "step") or value in ("", None):
                    continue
                out.setdefault(key, []).append((int(row["step"]) + 1, float(value)))
    return out


def curve_label(metric: str) -> str:
    """The y-axis label of a learning curve: which set, and which quantity, is plotted."""
    split = {"val": "dev", "test": "test", "train": "training"}.get(metric.split("/")[0], "")
    quantity = {"nll_per_token": "cost (NLL per token)", "ppl": "perplexity"}.get(
        metric.split("/")[-1], metric.split("/")[-1]
    )
    return f"{split} {quantity}".strip() + f"  [{metric}]"


def mean_band(curves: Sequence[Sequence[tuple[int, float]]]) -> tuple[list, ...]:
    """``(steps, mean, low, high)`` over the steps every curve has: several seeds of one
    system drawn as one line with their range around it."""
    tables = [dict(c) for c in curves]  # a step logged twice (a resumed run): its last value
    steps = sorted(set.intersection(*map(set, tables))) if tables else []
    if not steps:
        return [], [], [], []
    values = np.array([[t[s] for s in steps] for t in tables])  # (runs, steps)
    return steps, values.mean(0).tolist(), values.min(0).tolist(), values.max(0).tolist()


def distinct_colours(n: int) -> list:
    """``n`` colours, each unlike the others: matplotlib's ten for up to ten lines, then
    ``tab20``'s twenty, then evenly spaced hues (the default cycle repeats after ten)."""
    import matplotlib

    if n <= 10:
        return [f"C{i}" for i in range(n)]
    if n <= 20:
        return [matplotlib.colormaps["tab20"](i) for i in range(n)]
    return [matplotlib.colormaps["hsv"](i / n) for i in range(n)]


def plot_learning_curves(
    runs: Mapping[str, str | Path | Sequence[str | Path]],
    path: str | Path,
    metric: str = "val/nll_per_token",
    ylabel: str | None = None,
    title: str | None = None,
) -> Path:
    """Figure 5 on the dev set: ``metric`` against mini-batches for one or more runs. (The
    paper's Figure 5 plots test cost; runs log the dev set at each validation.) A label given
    several runs (seeds) is drawn as their mean, shaded from their lowest to highest value.
    A run without a CSV log is left out, and named (:func:`logged`)."""
    ylabel = ylabel or curve_label(metric)
    fig, ax = pyplot().subplots(figsize=(6, 4))
    colours = distinct_colours(len(runs))
    for (name, run_dirs), colour in zip(runs.items(), colours):
        run_dirs = logged([run_dirs] if isinstance(run_dirs, (str, Path)) else list(run_dirs))
        steps, mean, low, high = mean_band([read_metrics(r).get(metric, []) for r in run_dirs])
        if steps:
            (line,) = ax.plot(steps, mean, marker=".", label=name, color=colour)
            if len(run_dirs) > 1:
                ax.fill_between(steps, low, high, color=line.get_color(), alpha=0.2)
    ax.set_xlabel("mini-batches")
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
    if title:
        ax.set_title(title, fontsize=9)
    return save_with_legend(fig, ax, path)
