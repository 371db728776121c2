"""The paper's ladders, Table 1 (§4.2, En→De) and Table 3 (§4.3, De→En), from ladder runs.

A ladder run is a job of ``python -m luong_lit.train -m 'ladder=glob(table*)' seed=1234,2``
(``ladder=table1_…`` or ``ladder=table3_…`` in its overrides). A table lists the paper's rows in
its order: our dev and test perplexity and BLEU (greedy; beam where the run has it, after unk
replacement too on rows with attention: :mod:`luong_lit.analysis.records`) as mean ±
sample sd over the seeds that finished, beside the paper's ppl, BLEU and gain; every row names
both corpora. A row without a finished run says "not run yet". **Gain**: a row's BLEU minus
the row above's (beam where both rows have it, else greedy), from the unrounded means,
± sqrt(sd_a² + sd_b²) (the two rows' seed sds combined as for independent runs; given when both
rows have two or more seeds).

Below the models, as in the paper: "+ unk replace" (the last row's beam BLEU after unk
replacement; gain over the same runs' beam BLEU, paired: mean ± sd of each run's own gain) and
the ensemble: the JSON report of
``python -m luong_lit evaluate CKPT1 CKPT2 ... --test TEST --replace-unk``, its BLEU after unk
replacement (one system: its sd counts as 0), gain over "+ unk replace" (and, in the notes,
over the best single run of that row). It is read from the folder ``ensemble_table1/`` (or
``ensemble_table3/``: that report written there by ``evaluate --out``, with its output lines
for the paired test) or the file ``ensemble_table1.json`` in the sweep directory, or given to
``report`` as ``--ensemble FILE`` (the ladder its checkpoints' runs belong to) or
``--ensemble table1=FILE`` (:mod:`luong_lit.study.ensembles` finds it). The paper's
Table 3 has no ensemble row.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

from luong_lit.analysis.cells import mean_sd
from luong_lit.analysis.records import RunRow
from luong_lit.paper.numbers import LADDERS
from luong_lit.reports import Evaluation
from luong_lit.study import ladder_cells as as_text
from luong_lit.study.rows import LadderRow
from luong_lit.study.steps import judged, row_spread, sensitivity, verdict_cells

RECIPES: dict[str | None, str] = {  # the experiment a ladder row is added to
    "m30k_small": "ours (m30k_small: 2×256, Adam, the main job's additions)",
    "m30k_paper": "the paper's (m30k_paper: its §4.1 settings, at 2×256)",
    "m30k_paper_long": "the paper's, trained until dev stops improving (m30k_paper_long)",
}
ENSEMBLE = "`python -m luong_lit evaluate CKPT1 CKPT2 ... --test TEST"
NOTE = (
    "Ours: mean ± sample sd over seeds (tokenised BLEU). Test SE: the sd of a run's beam BLEU "
    "over resamples of the test sentences, averaged over the row's seeds (MultEval's s_sel). "
    "Gain: the row's mean beam BLEU over its seeds minus the row above's (\"+ unk replace\": "
    "the same runs decoded again, seeds paired), with its 95 % interval from a test over seeds "
    "and sentences (10,000 draws of the test sentences, one for all seeds, and a t-distributed "
    "seed term with Welch's df from the seeds' share of the variance: "
    "luong_lit.metrics.significance.two_level_bootstrap), over every seed of both rows; p: that "
    "test's, two-sided, (k+1)/(B+1), corrected by Holm's method over the table's tested steps "
    "(raw p beside it, ± its Monte Carlo error); a step whose two sides are the same lines is "
    "not tested and not in the family; holds / reversed: corrected p < 0.05 and the gain's "
    "sign, else not shown (which is not the same as no effect); with one seed on a side the "
    "test holds no seed variance of that side, and a verdict holds for those models only. Without "
    "both rows' outputs: the difference of the rows' means, untested."
)
PAIRED = " Rows trained with the same seeds are tested seed by seed (report --pair-seeds)."


def _recipe(row: RunRow) -> tuple[str | None, str]:
    """What a ladder table's runs share besides their row and seed: the experiment and any
    further overrides that change the recipe (runs differing in these are not seeds of one)."""
    return row.experiment, row.changes or ""


def ladder_table(ladder: str | None) -> str | None:
    """``table1`` or ``table3`` for a ladder config name (``table1_dropout``), else None."""
    table = str(ladder or "").split("_", 1)[0]
    return table if table in LADDERS else None


def _model_row(paper: tuple, runs: Sequence[RunRow]) -> LadderRow:
    """A model row: its finished runs' mean ± sd per metric beside the paper's (row, ppl, BLEU)."""
    done = [r for r in runs if r.ppl is not None]
    metrics = ["dev_ppl", "ppl", "bleu_greedy", "bleu_beam"]
    if done and done[0].attention != "none":
        metrics.append("bleu_beam_unk")
    unk = [
        (r.bleu_beam, r.bleu_beam_unk) for r in done if r.bleu_beam and r.bleu_beam_unk is not None
    ]
    return LadderRow(
        paper_row=paper[0], paper_ppl=paper[1], paper_bleu=paper[2], runs=len(runs), n=len(done),
        corpus=runs[0].corpus if runs else None, members=done,
        stats={m: mean_sd([r.measure(m) for r in done]) for m in metrics},
        recipe=_recipe(runs[0]) if runs else None,
        unk_gain=mean_sd([after - before for before, after in unk]),
        best_unk=max((after for _, after in unk), default=None),
    )  # fmt: skip


def _unk_row(last: LadderRow, paper: tuple) -> LadderRow:
    """'+ unk replace': the last model row's runs decoded with unknown-word replacement."""
    unk = last.stat("bleu_beam_unk")
    return LadderRow(
        paper_row=paper[0], paper_bleu=paper[1], kind="unk", corpus=last.corpus, runs=last.runs,
        n=last.n if unk[0] is not None else 0, paired=last.unk_gain, best_unk=last.best_unk,
        unk_of=last.members, stats={"bleu_beam_unk": unk}, compare={"bleu_beam": unk},
    )  # fmt: skip


def _ensemble_row(
    ensemble: Evaluation | None, paper: tuple | None, corpus: str | None
) -> LadderRow:
    """Our ensemble (a report of ``evaluate``) beside the paper's ensemble row, if it has one."""
    row = LadderRow(
        paper_row=paper[0] if paper else "ensemble (no such row in the paper)",
        paper_bleu=paper[1] if paper else None, kind="ensemble", corpus=corpus,
    )  # fmt: skip
    if ensemble:
        if corpus and ensemble.test:
            row.corpus = f"{corpus.split(' (')[0]} ({ensemble.test})"
        assert ensemble.beam is not None and ensemble.beam_unk is not None  # read_ensemble's
        unk = (ensemble.beam_unk.bleu_tok, 0.0)
        row.n, row.ensemble = 1, len(ensemble.checkpoints)
        row.stats = {"ppl": (ensemble.model_ppl, None), "bleu_beam": (ensemble.beam.bleu_tok, None)}
        row.stats["bleu_beam_unk"] = unk
        row.compare = {"bleu_beam": unk}
        row.ensemble_outputs = ensemble.lines("hyp_unk")
    return row


def lay_out(
    rows: Sequence[RunRow], table: str, ensemble: Evaluation | None = None
) -> list[LadderRow]:
    """``table``'s rows in the paper's order from the runs' rows (:func:`~luong_lit.analysis.
    runs.collect`): the models, "+ unk replace", and the ensemble where either side has one."""
    models, after = LADDERS[table][2:4]
    out = [_model_row(p, [r for r in rows if r.ladder == k]) for k, p in models.items()]
    corpus = next((r.corpus for r in out if r.corpus), None)
    for row in out:
        row.corpus = row.corpus or corpus
    out.append(_unk_row(out[-1], after["unk"]))
    if ensemble or "ensemble" in after:
        out.append(_ensemble_row(ensemble, after.get("ensemble"), corpus))
    return out


def gain(above: LadderRow, row: LadderRow) -> tuple[float, float | None, str] | None:
    """BLEU gain of ``row`` over ``above``: (difference of the means, sqrt(sd_a² + sd_b²) or
    None below two seeds a side, which BLEU), or None unless both rows have that BLEU. A row of
    the same runs decoded again ("+ unk replace") gives its paired gain instead."""
    if row.paired and row.paired[0] is not None:
        return (*row.paired, "beam")
    a, b = above.compare or above.stats, row.compare or row.stats
    for kind in ("bleu_beam", "bleu_greedy"):
        (ma, sa), (mb, sb) = a.get(kind, (None, None)), b.get(kind, (None, None))
        if ma is not None and mb is not None:
            spread = math.hypot(sa, sb) if sa is not None and sb is not None else None
            return mb - ma, spread, kind.split("_")[1]
    return None


def markdown_ladder(table: str, laid: Sequence[LadderRow], tests: Sequence | None = None) -> str:
    """One table of :func:`lay_out`'s rows, ours beside the paper's, with the gains (``tests``:
    :func:`judged`'s of these rows, found here where not given)."""
    number, section, *_, where = LADDERS[table]
    recipe = next((r.recipe for r in laid if r.recipe), None)
    title = f"### Table {number} ({section}): ours on {laid[0].corpus or '–'}"
    if recipe:
        title += f", recipe {RECIPES.get(recipe[0], recipe[0])}"
        title += f" with {recipe[1]}" if recipe[1] else ""
    title += as_text.hardware(laid)
    lines = [f"{title}; the paper's on {where}", "", f"| {as_text.HEAD} |", as_text.RULE]
    tests = judged(laid) if tests is None else tests
    for i, (row, test) in enumerate(zip(laid, tests, strict=True)):
        above = laid[i - 1] if i else None
        ours = gain(above, row) if above and above.n and row.n else None
        cells = [row.paper_row, row.corpus or "–", as_text.runs_text(row)]
        shown = ("dev_ppl", "ppl", "bleu_greedy", "bleu_beam", "bleu_beam_unk")
        cells += [as_text.mean_pm(row.stats.get(k)) for k in shown]
        spread = row_spread(row) if row.members else None
        cells.append("–" if spread is None else f"{spread.test_se:.2f}")
        tested = verdict_cells(test)
        cells += [tested[0] if test else as_text.gain_text(ours), *tested[1:], where]
        cells += [
            as_text.one(row.paper_ppl),
            as_text.one(row.paper_bleu),
            as_text.paper_gain(above, row),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _ensemble_note(ensemble: Evaluation, laid: Sequence[LadderRow]) -> str:
    """Where the ensemble comes from, and its gain over the best single run of "+ unk"."""
    names = ", ".join(Path(c).parent.parent.name or c for c in ensemble.checkpoints)
    note = f"Ensemble: {ensemble.path} (checkpoints of {names})."
    best = next((r.best_unk for r in laid if r.kind == "unk"), None)
    if best is not None:
        gain_best = ensemble.beam_unk.bleu_tok - best  # type: ignore[union-attr, operator]
        note += f' Its gain over the best single run of "+ unk replace" ({best:.2f}): '
        note += f"{gain_best:+.2f}."
    return note


def _notes(
    table: str, rows: Sequence[RunRow], ensemble: Evaluation | None, laid: Sequence[LadderRow],
    pair_seeds: bool = False,
) -> str:  # fmt: skip
    """What the numbers are, which runs have not finished, where the ensemble comes from."""
    notes = [NOTE + (PAIRED if pair_seeds else "")]
    waiting = [r.run for r in rows if ladder_table(r.ladder) == table and not r.ppl]
    if waiting:
        notes.append("Not finished (no test results yet): " + ", ".join(waiting) + ".")
    if ensemble:
        notes.append(_ensemble_note(ensemble, laid))
    else:
        notes.append(f"No ensemble yet (`ensemble_{table}/` in the sweep: {ENSEMBLE} "
                     f"--out SWEEP/ensemble_{table}`).")  # fmt: skip
    return "  \n".join(notes) + "\n"


def _resolved(path) -> Path:
    return Path(path).resolve()


def _ensemble_for(
    table: str, group: Sequence[RunRow], ensembles: list, alone: bool
) -> Evaluation | None:
    """The ensemble of ``table`` whose checkpoints are in the ``group``'s runs; where the group
    is the only one of its table, any ensemble of the table."""
    mine = {_resolved(r.path) for r in group if r.path}
    of_table = [e for t, e in ensembles if t == table]
    for e in of_table:
        if {_resolved(c).parent.parent for c in e.checkpoints} <= mine:
            return e
    return of_table[0] if alone and of_table else None


def _family_name(table: str, recipe) -> str:
    """A table's short name in the document-wide line: its number, experiment and changes."""
    experiment, changes = recipe or (None, "")
    changes = changes if len(changes) <= 40 else changes[:39] + "…"
    return f"Table {LADDERS[table][0]} ({experiment}{', ' + changes if changes else ''})"


def markdown_ladders(rows: Sequence[RunRow], ensembles=None, pair_seeds: bool = False) -> str:
    """Table 1 and Table 3 (those the rows have ladder runs of), one table for each recipe the
    runs were trained with (``experiment``), each with its notes, and a line on how the
    verdicts change with Holm's family the whole document. ``ensembles``: by table, or a list
    of ``(table, ensemble)`` (several sweeps, each with its own); ``pair_seeds``: rows trained
    with the same seeds are tested seed by seed (:func:`judged`)."""
    pairs = list(ensembles.items()) if isinstance(ensembles, dict) else list(ensembles or [])
    parts, families = [], []
    for table in LADDERS:
        mine = [r for r in rows if ladder_table(r.ladder) == table]
        recipes: list[tuple[str | None, str] | None]
        recipes = list(dict.fromkeys(map(_recipe, mine))) or [None]
        if not mine and not any(t == table for t, _ in pairs):
            continue
        for recipe in recipes:
            group = [r for r in mine if _recipe(r) == recipe]
            ensemble = _ensemble_for(table, group, pairs, len(recipes) == 1)
            laid = lay_out(group, table, ensemble)
            tests = judged(laid, pair_seeds)
            name = _family_name(table, recipe)
            families.append((name, laid, tests))
            notes = _notes(table, group, ensemble, laid, pair_seeds)
            parts.append(f"{markdown_ladder(table, laid, tests)}\n{notes}")
    wide = sensitivity(families)
    return "\n".join(parts) + (f"\n{wide}\n" if wide else "")
