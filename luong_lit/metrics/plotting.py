"""What the line plots share (Figure 5, Figure 6): matplotlib without a display, and a legend
under the plot that is never wider than it (:func:`save_with_legend`)."""

from __future__ import annotations

import textwrap
from pathlib import Path

#: the legend's font size, in points
LEGEND_SIZE = 7


def pyplot():
    """``matplotlib.pyplot`` drawing into files (the Agg backend)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def file_figure(figsize: tuple[float, float]):
    """A matplotlib ``Figure`` on an Agg canvas, not pyplot's (whose figures are global
    state): drawn and saved in any thread, needing no ``close``."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=figsize)
    FigureCanvasAgg(fig)
    return fig


def wrap_to(text: str, chars: int) -> str:
    """``text`` on lines of at most ``chars`` characters, broken at spaces where it can be."""
    return "\n".join(textwrap.wrap(text, max(chars, 8), break_on_hyphens=False)) or text


def legend_below(ax, fontsize: float = LEGEND_SIZE):
    """The legend under the axes (below their tick labels and x label), in as many columns (up
    to three) as fit within the axes' width; a label too long for one column is wrapped. Call it
    once the layout is done: the figure then grows downwards when saved with
    ``bbox_inches="tight"``, and the plot keeps its width whatever the labels."""
    handles, labels = ax.get_legend_handles_labels()
    if not handles:
        return None
    fig = ax.figure
    renderer = fig.canvas.get_renderer()
    room = ax.get_window_extent(renderer).width
    chars = int(room / (0.6 * fontsize * fig.dpi / 72))  # a generous width of one character
    labels = [wrap_to(label, chars) for label in labels]
    bottom = ax.get_tightbbox(renderer).y0 - 4  # under the tick labels and the x label
    anchor = (0.5, ax.transAxes.inverted().transform((0, bottom))[1])
    for ncol in range(min(3, len(labels)), 0, -1):
        legend = ax.legend(handles, labels, loc="upper center", bbox_to_anchor=anchor, ncol=ncol,
                           fontsize=fontsize, frameon=False)  # fmt: skip
        if legend.get_window_extent(renderer).width <= room:
            break
    return legend


def save_with_legend(fig, ax, path: str | Path, dpi: int = 110) -> Path:
    """Lay the figure out, put :func:`legend_below` under ``ax``, write ``path`` (PNG/PDF) and
    close the figure."""
    fig.tight_layout()
    legend_below(ax)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=dpi, bbox_inches="tight")
    pyplot().close(fig)
    return path
