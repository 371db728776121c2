"""What the notebook decodes of a run: its checkpoint (:func:`checkpoint_of`), the model and
datamodule loaded from it (:func:`load_run_model`), and BLEU by source length (Figure 6) from
the run's ``evaluate`` report, falling back to decoding the dev set greedily when the run has no
report yet (:func:`length_buckets`), drawn one figure per kind of source (:func:`figure6`). A
run without a checkpoint (or report) is left out of what needs it, and named in one line
(:func:`decodable`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from luong_lit.analysis.runs import own_evals
from luong_lit.errors import DataError
from luong_lit.reports import Evaluation

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


def source_kind(run: Path) -> str:
    """Which sentences and decoding :func:`length_buckets` reads for ``run``: ``TEST, beam N``
    from its ``evaluate`` report, else ``dev set, greedy``."""
    evals = own_evals(run)
    if evals:
        report = Evaluation.read(evals[0])
        return f"{report.test or evals[0].stem[5:]}, beam {report.beam_width or '?'}"
    return "dev set, greedy"


def buckets_source(run: Path) -> str:
    """:func:`source_kind`, and the file it is read from (or how to write one), in words."""
    evals = own_evals(run)
    why = evals[0].name if evals else "no eval_*.json in the run: `python -m luong_lit evaluate`"
    return f"{source_kind(run)} ({why}{'' if evals else ' writes one'})"


def by_source(cells: Mapping[str, Sequence[Path]]) -> dict[str, dict[str, list[Path]]]:
    """The cells' runs by :func:`source_kind`, then by cell: one kind of curve per figure (a
    test set's beam BLEU never beside another run's greedy dev BLEU)."""
    out: dict[str, dict[str, list[Path]]] = {}
    for label, runs in cells.items():
        for run in runs:
            out.setdefault(source_kind(run), {}).setdefault(label, []).append(run)
    return out


def length_buckets(run: Path, max_sentences: int | None = None) -> list[dict]:
    """BLEU by source length: from the run's ``eval_*.json``, else greedy on its dev set."""
    evals = own_evals(run)
    if evals:
        found = Evaluation.read(evals[0]).length_buckets
        if found is None:
            raise DataError(f"{evals[0]}: no length_buckets (BLEU by source length) in it")
        return found
    from luong_lit.metrics.bleu import bleu_lines
    from luong_lit.metrics.buckets import bleu_by_length

    model, dm = load_run_model(run)
    dev = dm.splits["dev"]
    words = model.inference.split(dev, max_sentences=max_sentences).words
    hyps = bleu_lines(words, dm.tokenizers.get("tgt"))
    refs = bleu_lines(dev.tgt_tokens[: len(hyps)], dm.tokenizers.get("tgt"))
    return bleu_by_length(hyps, refs, [len(s) for s in dev.src_tokens[: len(hyps)]])


def cell_buckets(runs: Sequence[Path], max_sentences: int | None = None) -> list[dict]:
    """Figure 6's rows for one cell: :func:`length_buckets` of each run, mean ± sd over seeds
    (the runs of one seed averaged first: a seed run twice is one seed)."""
    from luong_lit.analysis.runs import describe
    from luong_lit.metrics.buckets import mean_buckets

    by_seed: dict = {}
    for run in runs:
        by_seed.setdefault(describe(run).seed, []).append(length_buckets(run, max_sentences))
    seeds = [mean_buckets(rows) for rows in by_seed.values()]
    means = [[{k: v for k, v in r.items() if k != "bleu_sd"} for r in s] for s in seeds]
    return mean_buckets(means)  # the sd over seeds, not over the runs of one seed


def figure6(
    cells: Mapping[str, Sequence[Path]], out_dir: Path, max_sentences: int | None = None
) -> list[Path]:
    """Figure 6 of the cells' runs that can be decoded (:func:`decodable`): one figure per kind
    of source (:func:`by_source`), titled by it, each cell a line (its seeds: mean ± sd);
    ``figure6_bleu_by_length.png``, then ``_2``, ``_3`` for further kinds."""
    from luong_lit.analysis.tables import with_seeds
    from luong_lit.metrics.buckets import plot_bleu_by_length

    kept = {label: found for label, runs in cells.items() if (found := decodable(runs))}
    paths = []
    for k, (kind, kind_cells) in enumerate(by_source(kept).items()):
        systems = {}
        for label, runs in with_seeds(kind_cells).items():
            print(f"{label}: {buckets_source(runs[0])}")
            systems[label] = cell_buckets(runs, max_sentences)
        name = f"figure6_bleu_by_length{f'_{k + 1}' if k else ''}.png"
        title = f"Figure 6: BLEU by source length ({kind})"
        paths.append(plot_bleu_by_length(systems, Path(out_dir) / name, title=title))
    return paths
