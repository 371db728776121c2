"""A sweep's runs grouped into cells: runs that differ only by ``seed`` are one cell, reported
as mean ± sample standard deviation over its seeds beside the paper's row (Markdown and CSV); a
seed run twice counts once.

A sweep directory is what ``python -m luong_lit train -m ...`` writes: one run directory per
job (see :mod:`luong_lit.analysis.runs`), and ``multirun.yaml``.
"""

from __future__ import annotations

import csv
import io
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from luong_lit.analysis.records import RunRow
from luong_lit.analysis.runs import OTHER_COLUMNS, is_run

METRICS = ("dev_ppl", "ppl", "bleu_greedy", "bleu_beam", "bleu_beam_unk")
OTHERS = tuple(key for key, _ in OTHER_COLUMNS)  # chrF and TER: blank where runs lack them
PAPER = (("ppl", "paper ppl"), ("bleu", "paper BLEU"), ("bleu_unk", "paper + unk"))


def run_dirs(paths: Iterable[str | Path]) -> list[Path]:
    """Run directories: each path itself, the runs inside a sweep directory, or, in a folder of
    kept runs (``results/ladders/STUDY/ROW/seedS``), the runs below it."""
    found: list[Path] = []
    for path in map(Path, paths):
        if is_run(path):
            found.append(path)
            continue
        inside = _inside(path) if path.is_dir() else []
        if not inside:
            raise FileNotFoundError(
                f"{path}: not a luong_lit run directory (no .hydra/config.yaml) "
                f"nor a folder holding any"
            )
        found.extend(inside)
    return found


def _inside(path: Path) -> list[Path]:
    """A sweep's runs in job order; else every run below ``path``, in path order."""
    jobs = [p for p in path.iterdir() if is_run(p)]
    if jobs:
        first = lambda p: p.name.split("_")[0]  # noqa: E731
        return sorted(jobs, key=lambda p: int(first(p)) if first(p).isdigit() else 0)
    return sorted(
        c.parent.parent for c in path.rglob(".hydra/config.yaml") if is_run(c.parent.parent)
    )


def mean_sd(values: Sequence[float | None]) -> tuple[float | None, float | None]:
    """Mean and sample standard deviation of the values present (sd None below two)."""
    xs = [float(v) for v in values if v is not None]
    if not xs:
        return None, None
    return statistics.fmean(xs), statistics.stdev(xs) if len(xs) > 1 else None


def varying(cells: Sequence[str]) -> list[str]:
    """Each cell's overrides without those every cell shares: what the sweep varies (the
    whole cell where there is one, or nothing varies)."""
    parts = [set(c.split()) for c in cells]
    common = set.intersection(*parts) if len(parts) > 1 else set()
    return [" ".join(x for x in c.split() if x not in common) or c for c in cells]


def seed_means(members: Sequence[RunRow], metric: str) -> list[float | None]:
    """``metric`` once per seed: the mean of the runs of that seed (the same recipe and seed run
    again is one more run, not one more seed), None for a seed without it."""
    by_seed: dict = {}
    for m in members:
        by_seed.setdefault(m.seed, []).append(m.measure(metric))
    return [mean_sd(values)[0] for values in by_seed.values()]


def _seeds(k: int) -> str:
    return f"{k} seed{'s' if k > 1 else ''}"


def seeds_note(seeds: Sequence) -> str:
    """How many seeds (and runs, where a seed was run more than once) a cell of runs of these
    ``seeds`` holds, as a label's ending: ``", 2 seeds"``, ``", 1 seed (2 runs)"``; "" for one
    run."""
    runs, distinct = len(seeds), len(set(seeds))
    if runs < 2:
        return ""
    return f", {_seeds(distinct)}" + (f" ({runs} runs)" if runs > distinct else "")


@dataclass(frozen=True)
class Cell:
    """Runs of one recipe that differ only by their seed: its name (what varies between the
    cells), system, runs and their seeds, the paper's row, and each metric's mean and sd over
    the seeds (:func:`seed_means`)."""

    cell: str
    attention: str
    score: str | None
    seeds: tuple
    paper: dict | None
    stats: dict[str, tuple[float | None, float | None]]

    @property
    def n(self) -> int:
        """How many runs (a seed run twice counts twice here, once in :attr:`stats`)."""
        return len(self.seeds)

    @property
    def system(self) -> str:
        """What the cell's model is, from its resolved config: ``attention (score)``, or
        ``none`` (a cell named ``ablation=global_general`` with ``score=concat`` is ``global
        (concat)``)."""
        return f"{self.attention} ({self.score})" if self.score else str(self.attention)


def group(rows: Sequence[RunRow]) -> list[Cell]:
    """One :class:`Cell` per cell, in order of first appearance; a cell is named by what varies
    between the cells (:func:`varying`)."""
    cells: dict[str, list[RunRow]] = {}
    for row in rows:
        cells.setdefault(row.cell, []).append(row)
    out = []
    for cell, members in zip(varying(list(cells)), cells.values()):
        first = members[0]
        stats = {m: mean_sd(seed_means(members, m)) for m in (*METRICS, *OTHERS)}
        seeds = tuple(m.seed for m in members)
        out.append(Cell(cell, first.attention, first.score, seeds, first.paper, stats))
    return out


def runs_text(cell: Cell) -> str:
    """A cell's number of runs, and of seeds where a seed was run again: ``3 (2 seeds)``."""
    distinct = len(set(cell.seeds))
    return str(cell.n) + (f" ({_seeds(distinct)})" if distinct < cell.n else "")


def pm(pair: tuple[float | None, float | None]) -> str:
    """``mean ± sd`` (``mean`` alone without an sd, ``–`` without a mean)."""
    mean, sd = pair
    if mean is None:
        return "–"
    return f"{mean:.2f}" if sd is None else f"{mean:.2f} ± {sd:.2f}"


def _paper(p: dict | None, key: str) -> str:
    value = p.get(key) if p else None
    return "–" if value is None else f"{value:.1f}"


def markdown_cells(cells: Sequence[Cell]) -> str:
    """Mean ± sd per cell beside the paper's row (chrF and TER after BLEU)."""
    head = ["cell", "system", "runs", "dev ppl", "test ppl", "greedy BLEU", "beam BLEU", "+ unk"]
    head += [name for _, name in OTHER_COLUMNS] + ["paper row"] + [name for _, name in PAPER]
    rule = "|---|---|---:|" + "---:|" * (5 + len(OTHERS)) + "---|" + "---:|" * 3
    lines = ["| " + " | ".join(head) + " |", rule]
    for c in cells:
        p = c.paper
        row = [c.cell, c.system, runs_text(c)] + [pm(c.stats[m]) for m in (*METRICS, *OTHERS)]
        row += [f"Table {p['table']}: {p['row']}" if p else "–"]
        row += [_paper(p, key) for key, _ in PAPER]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"


def csv_cells(cells: Sequence[Cell]) -> str:
    """The same as :func:`markdown_cells`, one column per mean and per sd."""
    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerow(
        ["cell", "attention", "score", "runs", "seeds"]
        + [f"{m}_{s}" for m in (*METRICS, *OTHERS) for s in ("mean", "sd")]
        + ["paper_table", "paper_row"]
        + [f"paper_{key}" for key, _ in PAPER]
    )
    for c in cells:
        p = c.paper or {}
        values = [v for m in (*METRICS, *OTHERS) for v in c.stats[m]]
        writer.writerow(
            [c.cell, c.attention, c.score or "", c.n, " ".join(map(str, c.seeds))]
            + ["" if v is None else f"{v:.4f}" for v in values]
            + [p.get("table", ""), p.get("row", "")]
            + ["" if p.get(key) is None else p[key] for key, _ in PAPER]
        )
    return buf.getvalue()
