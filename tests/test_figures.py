"""The notebook's figures stay readable with 2, 8 and 20 runs that carry overrides: labels say
what differs between the runs, the legends sit under the plots, the attention panels wrap."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import yaml
from conftest import compose_cfg
from matplotlib.image import imread

from luong_lit.analysis import tables
from luong_lit.analysis.figures import attention_figure, plot_learning_curves
from luong_lit.metrics.buckets import plot_bleu_by_length

CONSTANT = ["++trainer.limit_test_batches=2", "++trainer.val_check_interval=5"]
SYSTEMS = list(itertools.product(["global", "local_m", "local_p"], ["dot", "general"]))


def fake_sweep(root, n: int) -> list:
    """``n`` runs of a sweep over attention × score × dropout (seeds 1 and 2 after the first
    cells), every run with the same constant overrides, each with a short CSV log."""
    from omegaconf import OmegaConf

    runs, combos = [], itertools.product([0.0, 0.2, 0.3, 0.4], SYSTEMS, [1, 2])
    for num, (drop, (att, score), seed) in zip(range(n), combos):
        overrides = [*CONSTANT, f"attention={att}", f"score={score}", f"dropout={drop}"]
        overrides.append(f"seed={seed}")
        run = root / f"{num}_job"
        (run / ".hydra").mkdir(parents=True)
        OmegaConf.save(compose_cfg(overrides, run), run / ".hydra" / "config.yaml")
        (run / ".hydra" / "overrides.yaml").write_text(yaml.safe_dump(overrides))
        (run / "csv").mkdir()
        rows = [f"{e},{100 * (e + 1)},{5.0 - e / (num + 2)},{150 - e}" for e in range(4)]
        (run / "csv" / "metrics.csv").write_text(
            "epoch,step,val/nll_per_token,val/ppl\n" + "\n".join(rows) + "\n"
        )
        runs.append(run)
    return runs


def shape(path) -> tuple[int, int]:
    height, width = imread(str(path)).shape[:2]
    return height, width


@pytest.mark.parametrize("n", [2, 8, 20])
def test_the_figures_of_a_sweep_with_overrides_stay_readable(tmp_path, n):
    cells = tables.cells(fake_sweep(tmp_path / "sweep", n))
    labels = list(cells)
    assert len(set(labels)) == len(labels)  # what differs, said
    assert not any("++trainer" in label for label in labels)  # not what every run shares
    fig5 = plot_learning_curves(cells, tmp_path / "fig5.png")
    h5, w5 = shape(fig5)
    assert 500 <= w5 <= 1500 and 350 <= h5 <= 1700  # the plot keeps its size, the legend under
    rows = [{"bucket": b, "n": 10, "bleu": 20.0 + i} for i, b in enumerate(["<10", "10-19", "20+"])]
    fig6 = plot_bleu_by_length(dict.fromkeys(labels, rows), tmp_path / "fig6.png")
    h6, w6 = shape(fig6)
    assert 500 <= w6 <= 1500 and 350 <= h6 <= 1700
    src, tgt = [f"s{i}" for i in range(12)], [f"t{i}" for i in range(10)]
    panels = [(label, np.random.default_rng(0).random((10, 12))) for label in labels]
    fig = attention_figure(panels, src, tgt)
    width, height = fig.get_size_inches()
    panel = width / min(len(labels), 4)
    assert panel < 6 and width <= 4 * panel + 1e-6  # at most four panels a row, then another
    assert len(fig.axes) == min(len(labels), 4) * -(-len(labels) // 4) and height < 5 * len(
        fig.axes
    )
    assert [ax.get_title() for ax in fig.axes if ax.get_title()] == labels
