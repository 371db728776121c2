"""The ladders in the notebook: Tables 1 and 3 from the ladder runs (``ladder=table1_…``,
``table3_…``; :func:`ladder_markdown`), and Figures 5 and 6 of Table 1's models
(:func:`figure5_ladder`, :func:`figure6_ladder`), the corpus named in every title."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from luong_lit.analysis.decoded import buckets_source, cell_buckets, decodable
from luong_lit.analysis.runs import describe, own_evals
from luong_lit.paper.numbers import LADDERS


def by_ladder_row(runs: Sequence[Path]) -> dict[str | None, list[Path]]:
    """The runs by their ``ladder`` row (None: not a ladder run), in the order given."""
    by_row: dict[str | None, list[Path]] = {}
    for run in runs:
        by_row.setdefault(describe(run).ladder, []).append(run)
    return by_row


def ladder_runs(runs: Sequence[Path], table: str = "table1") -> dict[str, list[Path]]:
    """The runs of one ladder (``table1``: Table 1, ``table3``: Table 3) by row in the paper's
    order, keyed by the paper's row (and the number of seeds, where several); rows without runs
    are left out."""
    by_row = by_ladder_row(runs)
    out = {}
    for key, paper in LADDERS[table][2].items():
        if members := by_row.get(key):
            out[paper[0] + (f", {len(members)} seeds" if len(members) > 1 else "")] = members
    return out


def no_ladder(table: str = "table1") -> str:
    """The one line said where the runs hold no run of the ladder."""
    return (
        f"No Table {table[-1]} ladder run among the runs (`python -m luong_lit.train -m "
        f"'ladder=glob({table}_*)' seed=1234,2` makes them)."
    )


def ladder_markdown(runs: Sequence[Path], table: str = "table1") -> str:
    """Table 1 or Table 3 from the ladder's runs (:mod:`luong_lit.study.ladders`), with the
    ensemble of ``ensemble_table1/`` (``_table3``) beside the runs' folders, if any."""
    from luong_lit.analysis.runs import collect
    from luong_lit.study.ensembles import find_ensembles
    from luong_lit.study.ladders import markdown_ladders

    mine = [run for members in ladder_runs(runs, table).values() for run in members]
    if not mine:
        return no_ladder(table) + "\n"
    found = find_ensembles(dict.fromkeys(run.parent for run in mine))
    ensembles = {t: e for t, e in found.items() if t == table}
    return markdown_ladders([collect(run) for run in mine], ensembles)


def _where(run: Path) -> str:
    """The run's corpus and direction, without its test set: ``Multi30k En→De``."""
    return describe(run).corpus.split(" (")[0]


def figure5_ladder(runs: Sequence[Path], path: Path, table: str = "table1") -> Path | None:
    """Figure 5 on our ladder: the dev cost (ln perplexity, ``val/nll_per_token``) of each row's
    models against mini-batches, seeds as their mean and range (the paper plots test cost on
    newstest2014); None without runs of the ladder."""
    from luong_lit.analysis.figures import plot_learning_curves

    rows = ladder_runs(runs, table)
    if not rows:
        return None
    where = _where(next(iter(rows.values()))[0])
    title = f"Figure 5: Table {table[-1]}'s models on {where}, dev set\n"
    title += f"(the paper: test cost on {LADDERS[table][4]})"
    return plot_learning_curves(rows, path, title=title)


def one_source(rows: dict[str, list[Path]]) -> dict[str, list[Path]]:
    """The rows' runs that are read from one kind of source: where any run has an ``evaluate``
    report (a test set, beam), only the runs with one, each other run named in one line; else
    all of them (greedy on the dev set). Labels count the seeds kept."""
    if not any(own_evals(run) for members in rows.values() for run in members):
        return rows
    kept = {}
    for label, members in rows.items():
        reported = [run for run in members if own_evals(run)]
        for run in members:
            if run not in reported:
                print(f"skipped {run.name}: no evaluate report, unlike the other rows' runs "
                      "(`python -m luong_lit evaluate CKPT --out RUN` writes one)")  # fmt: skip
        name = label.rsplit(", ", 1)[0] if label.endswith(" seeds") else label
        if reported:
            kept[name + (f", {len(reported)} seeds" if len(reported) > 1 else "")] = reported
    return kept


def figure6_ladder(
    runs: Sequence[Path], path: Path, table: str = "table1", max_sentences: int | None = None
) -> Path | None:
    """Figure 6 on our ladder: BLEU by source length of each row's models (:func:`cell_buckets`:
    a run's ``eval_*.json``, else greedy on its dev set; seeds: mean ± sd), the sentences read
    named per row; None without runs of the ladder that can be decoded."""
    from luong_lit.metrics.buckets import plot_bleu_by_length

    rows = {
        k: kept for k, members in ladder_runs(runs, table).items() if (kept := decodable(members))
    }
    rows = one_source(rows)
    if not rows:
        return None
    for label, members in rows.items():
        print(f"{label}: {buckets_source(members[0])}")
    first = next(iter(rows.values()))[0]
    read = buckets_source(first).split(" (")[0]
    title = f"Figure 6: Table {table[-1]}'s models on {_where(first)}\n({read})"
    systems = {label: cell_buckets(members, max_sentences) for label, members in rows.items()}
    if not read.startswith("dev set") and (line := ensemble_buckets(runs, table)):
        systems[line[0]] = line[1]
    return plot_bleu_by_length(systems, path, title=title)


def ensemble_buckets(runs: Sequence[Path], table: str = "table1") -> tuple[str, list] | None:
    """Figure 6's line of the ladder's ensemble (``ensemble_table1/`` beside the runs' folders,
    its ``evaluate`` report's buckets, after unk replacement as each run's), or None."""
    from luong_lit.study.ensembles import find_ensembles

    found = find_ensembles(dict.fromkeys(Path(run).parent for run in runs)).get(table)
    if found is None or found.length_buckets is None:
        return None
    return f"ensemble of {len(found.checkpoints)} (last row) + unk", found.length_buckets


def best_run(runs: Sequence[Path]) -> Path:
    """The run of highest beam BLEU on its test set (the first of equals, and the first where
    none has one yet): the seed the exhibits show."""
    from luong_lit.analysis.runs import collect

    def bleu(run: Path) -> float:
        found = collect(run).bleu_beam
        return float("-inf") if found is None else found

    return max(runs, key=bleu)  # max keeps the first of equals


def best_and_base(best_runs: Sequence[Path], base_runs: Sequence[Path]) -> tuple[Path, Path]:
    """Table 5's pair: the last row's best run (:func:`best_run`), and the base row's run of
    the same seed (else its first run)."""
    best = best_run(best_runs)
    seed = describe(best).seed
    same = [r for r in base_runs if describe(r).seed == seed]
    return best, (same or list(base_runs))[0]


def ladder_table5(runs: Sequence[Path], table: str = "table1") -> str:
    """Table 5 from a ladder: its best model (:func:`best_and_base`) against the base row's
    run of the same seed (:func:`~luong_lit.study.exhibits.table5`), or the line saying
    what is missing."""
    from luong_lit.errors import DataError
    from luong_lit.study.exhibits import table5

    rows = list(ladder_runs(runs, table).items())
    if len(rows) < 2:
        return no_ladder(table) + "\n"
    (base_row, base_runs), (best_row, best_runs) = rows[0], rows[-1]
    best, base = best_and_base(best_runs, base_runs)

    def name(row: str, run: Path) -> str:
        return f"{row.split(', ')[0]} ({describe(run).experiment}, seed {describe(run).seed})"

    names = (name(best_row, best), name(base_row, base))
    try:
        return table5(best, base, names=names)
    except DataError as err:
        return f"Table 5 needs both runs' evaluate reports: {err}\n"


FIGURE7 = {
    "global (location), feed": "table1_feed_input",
    "local-p (general), feed": "table1_local_p_general",
}


def ladder_figure7(runs: Sequence[Path], path: Path) -> Path | str:
    """Figure 7 from the runs (:func:`~luong_lit.study.exhibits.figure7`): Table 1's global
    (location, input feeding) and local-p (general) rows, and a local-m run if there is one,
    each row's best seed (:func:`best_run`); else the line saying what is missing."""
    from luong_lit.analysis.decoded import checkpoint_of
    from luong_lit.errors import UserError
    from luong_lit.study.exhibits import figure7

    by_ladder = by_ladder_row(runs)
    models = {k: best_run(by_ladder[v]) for k, v in FIGURE7.items() if v in by_ladder}
    local_m = [r for r in runs if describe(r).attention == "local_m"]
    if local_m:
        chosen = best_run(local_m)
        models[f"local-m ({describe(chosen).score})"] = chosen
    if len(models) < 2:
        return "Figure 7 needs Table 1's attention rows (and a local-m run) among the runs"
    recipes = {describe(r).experiment for r in models.values()}
    if len(recipes) > 1:  # say which recipe each model was trained with
        models = {f"{k}, {describe(r).experiment}": r for k, r in models.items()}
    try:
        return figure7({k: checkpoint_of(r) for k, r in models.items()}, path)
    except (UserError, FileNotFoundError) as err:
        return f"Figure 7 needs the RWTH gold set and En→De or De→En models: {err}"
