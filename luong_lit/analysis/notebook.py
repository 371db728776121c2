"""Helpers for the analysis notebook: load run directories and draw the paper's figures.

Everything here reads what ``train``, ``evaluate`` and ``align`` wrote into run directories,
falling back to decoding the dev set when a run has no evaluation report yet.
The ladders' tables and figures: :mod:`luong_lit.analysis.ladder_views`. A run without a CSV
log or without a checkpoint is left out of what needs it, and named in one line.
"""

from __future__ import annotations

import glob
import json
import os
import warnings
from collections.abc import Sequence
from pathlib import Path

from luong_lit.analysis.runs import is_run, own_evals, run_label

SWEEPS = "logs/train/multiruns/*/*"
DEFAULT_RUNS = f"logs/train/runs/*,{SWEEPS}"


def search_folders() -> list[Path]:
    """Where relative patterns are resolved, in order: the folder the user started Jupyter
    from (``$PWD``: a kernel's own working directory is the notebook's folder), the working
    directory, and the source tree the kit runs from (where ``python -m luong_lit train``
    writes ``logs/`` in a checkout)."""
    folders = [os.environ.get("PWD"), os.getcwd(), str(Path(__file__).resolve().parents[2])]
    out: list[Path] = []
    for f in folders:
        if f and Path(f).resolve() not in out:
            out.append(Path(f).resolve())
    return out


def _matches(pattern: str, folders: Sequence[Path]) -> list[Path]:
    if Path(pattern).is_absolute():
        return sorted(p for p in map(Path, glob.glob(pattern)) if is_run(p))
    for folder in folders:
        found = sorted(folder / m for m in glob.glob(pattern, root_dir=folder))
        found = [p for p in found if is_run(p)]
        if found:
            return found
    return []


def find_runs(patterns: str | Sequence[str], folders: Sequence[Path] | None = None) -> list[Path]:
    """Run directories (with ``.hydra/config.yaml``) matching paths or glob patterns (a list,
    or one comma-separated string), all resolved in the first of ``folders`` where one
    matches. A pattern that matches nothing is named at once, with the
    folders it was resolved from: a warning when other patterns matched, else an error."""
    if isinstance(patterns, str):
        patterns = [p for p in patterns.split(",") if p.strip()]
    folders = list(folders) if folders is not None else search_folders()
    # all patterns from one folder: the first where any matches (runs of two projects never mix)
    per_folder = ([_matches(p.strip(), [f]) for p in patterns] for f in folders)
    chosen = next((m for m in per_folder if any(m)), [[] for _ in patterns])
    runs: list[Path] = []
    empty = []
    for pattern, found in zip(patterns, chosen):
        runs += [r for r in found if r not in runs]
        if not found:
            empty.append(pattern)
    where = ", ".join(map(str, folders))
    if not runs:
        raise FileNotFoundError(
            f"no run directory (one with .hydra/config.yaml) matches {', '.join(patterns)!s}; "
            f"relative patterns were looked up in: {where}. Set LUONG_LIT_RUNS to run "
            "directories or globs, e.g. LUONG_LIT_RUNS='logs/train/runs/*'"
        )
    for pattern in empty:
        if pattern.strip() == SWEEPS:  # the default's sweeps: none run yet, nothing amiss
            print(f"no sweeps yet ({SWEEPS} is empty in {where})")
            continue
        warnings.warn(f"{pattern!r} matches no run directory (looked in: {where})", stacklevel=2)
    return runs


def figures_dir() -> Path:
    """Where the notebook writes its figures: ``LUONG_LIT_FIGURES`` (a relative path is taken
    from the folder Jupyter was started in, as the run patterns are), else ``figures/`` there."""
    folder = Path(os.environ.get("LUONG_LIT_FIGURES", "figures")).expanduser()
    return folder if folder.is_absolute() else search_folders()[0] / folder


def cells(runs: Sequence[Path]) -> dict[str, list[Path]]:
    """Runs grouped as :func:`table4` groups them (runs that differ only by their seed are one
    cell), keyed by a figure label: the system (``global (general)``), then the cell's
    overrides where two cells share a system, and the number of seeds where there are several."""
    from luong_lit.analysis.cells import cell_of

    groups: dict[str, list[Path]] = {}
    for run in runs:
        groups.setdefault(cell_of(run), []).append(run)
    systems = [run_label(members[0]) for members in groups.values()]
    out: dict[str, list[Path]] = {}
    for (cell, members), system in zip(groups.items(), systems):
        label = f"{system} [{cell}]" if systems.count(system) > 1 else system
        out[label + (f", {len(members)} seeds" if len(members) > 1 else "")] = members
    return out


def table4(runs: Sequence[Path]) -> str:
    """Table 4 from run directories: runs that differ only by their seed are one row, mean ±
    sd (``python -m luong_lit report`` on a sweep); one row per run when no seed repeats."""
    from luong_lit.analysis.cells import group, markdown_cells, read_run
    from luong_lit.analysis.runs import markdown

    rows = [read_run(r) for r in runs]
    cells = group(rows)
    return markdown_cells(cells) if any(c["n"] > 1 for c in cells) else markdown(rows)


NO_MODEL = "no checkpoint (a run stopped before its first validation)"


def decodable(runs: Sequence[Path], reports: bool = True) -> list[Path]:
    """The runs with a checkpoint (or, with ``reports``, an ``evaluate`` report, all Figure 6
    reads); each other run is named in one line."""
    kept = []
    for run in runs:
        if checkpoint_of(run).is_file() or (reports and own_evals(run)):
            kept.append(run)
        else:
            print(f"skipped {run.name}: {NO_MODEL}")
    return kept


def checkpoint_of(run: Path) -> Path:
    """A run's best checkpoint (its last one while it has no best yet)."""
    best = Path(run) / "checkpoints" / "best.ckpt"
    return best if best.is_file() else Path(run) / "checkpoints" / "last.ckpt"


def load_run_model(run: Path):
    """``(translator, datamodule)`` of a run's best checkpoint (:func:`luong_lit.load`), the
    datamodule with the run's dev split loaded."""
    from luong_lit.data.loading.model_data import datamodule_for
    from luong_lit.translator import load

    model = load(checkpoint_of(run))
    return model, datamodule_for(model.meta)


def buckets_source(run: Path) -> str:
    """Which sentences and decoding :func:`length_buckets` reads for ``run``, in words."""
    evals = own_evals(run)
    if evals:
        report = json.loads(evals[0].read_text())
        beam = (report.get("decoding") or {}).get("beam", "?")
        return f"{report.get('test', evals[0].stem[5:])}, beam {beam} ({evals[0].name})"
    return "dev set, greedy (no eval_*.json in the run: `python -m luong_lit evaluate` writes one)"


def length_buckets(run: Path, max_sentences: int | None = None) -> list[dict]:
    """BLEU by source length: from the run's ``eval_*.json``, else greedy on its dev set."""
    evals = own_evals(run)
    if evals:
        return json.loads(evals[0].read_text())["length_buckets"]
    from luong_lit.metrics.bleu import bleu_lines
    from luong_lit.metrics.buckets import bleu_by_length

    model, dm = load_run_model(run)
    dev = dm.splits["dev"]
    words = model.decoder.split(dev, max_sentences=max_sentences).words
    hyps = bleu_lines(words, dm.tokenizers.get("tgt"))
    refs = bleu_lines(dev.tgt_tokens[: len(hyps)], dm.tokenizers.get("tgt"))
    return bleu_by_length(hyps, refs, [len(s) for s in dev.src_tokens[: len(hyps)]])


def cell_buckets(runs: Sequence[Path], max_sentences: int | None = None) -> list[dict]:
    """Figure 6's rows for one cell: :func:`length_buckets` of each run, mean ± sd over seeds."""
    from luong_lit.metrics.buckets import mean_buckets

    return mean_buckets([length_buckets(r, max_sentences) for r in runs])


def _aer_row(label: str, rep: dict) -> str:
    other = rep.get("aer_by_convention", {}).get("predicted")
    unk = rep.get("unk_token_share")
    cells = [f"{rep['aer']:.3f}", "" if other is None else f"{other:.3f}"]
    cells.append("" if unk is None else f"{100 * unk:.1f} %")
    return f"| {label} | " + " | ".join(cells) + " |"


def aer_table(runs: Sequence[Path]) -> str:
    """Table 6 in Markdown: each run's AER (``align.json``), an ensemble led by it
    (``align_ensemble.json``), the predicted-word convention's AER and the share of ``<unk>``
    tokens beside it, then the baselines."""
    lines = ["| system | AER | AER, predicted word | `<unk>` tokens |", "|---|---:|---:|---:|"]
    baselines: dict[str, float] = {}
    for run in runs:
        for name in ("align.json", "align_ensemble.json"):
            if not (run / name).is_file():
                continue
            rep = json.loads((run / name).read_text())
            label = run_label(run)
            if name == "align_ensemble.json":
                label = f"ensemble of {len(rep.get('checkpoints', []))} (with {label})"
                if str(rep.get("convention", "")).startswith("per member"):
                    label += f", {rep['convention']}"  # each member read in its own convention
            lines.append(_aer_row(label, rep))
            baselines.update(rep.get("baselines", {}))
    if len(lines) == 2:
        return (
            "No run has an AER yet: `python -m luong_lit align RUN/checkpoints/best.ckpt "
            "--rwth --baselines` writes `RUN/align.json`.\n"
        )
    lines += [f"| {name} | {value:.3f} | | |" for name, value in baselines.items()]
    return "\n".join(lines) + "\n"


def heatmaps_side_by_side(runs: Sequence[Path], sentence: int = 0, max_len: int = 30):
    """One figure with the forced-decoding attention of each run on the same dev sentence."""
    from luong_lit.analysis.figures import attention_figure, heatmap_panels

    panels, words = [], None
    for run in runs:
        model, dm = load_run_model(run)
        if not model.decoder.has_attention:
            continue
        dev = dm.splits["dev"]
        src_ids, tgt_ids = dev.src_ids[sentence][:max_len], dev.tgt_ids[sentence][:max_len]
        panels += heatmap_panels({run_label(run): model.decoder.stepper}, src_ids, tgt_ids)
        words = (dev.src_tokens[sentence][:max_len], dev.tgt_tokens[sentence][:max_len])
    if not panels:
        raise ValueError("none of the runs has an attention model")
    return attention_figure(panels, *words)
