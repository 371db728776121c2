"""BLEU by source-sentence length (the paper's Figure 6), as rows and as a plot."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from luong_lit.metrics.bleu import corpus_bleu_tok

EDGES = (10, 20, 30, 40, 50, 60, 70)  # Figure 6 groups sentences in steps of 10 words


MIN_SENTENCES = 20  # a bucket with fewer sentences is merged into its neighbour


def _range_label(lo: int, upper: int | None) -> str:
    if upper is None:
        return f"{lo}+"
    return f"{lo}-{upper - 1}" if lo else f"<{upper}"


def _merge_small(groups: list[list], min_sentences: int) -> list[list]:
    """Adjacent ``[lo, upper, indices]`` groups joined left to right until each holds at least
    ``min_sentences`` sentences; a short remainder joins the last group."""
    merged: list[list] = []
    for lo, upper, idx in groups:
        if merged and len(merged[-1][2]) < min_sentences:
            merged[-1][1], merged[-1][2] = upper, merged[-1][2] + idx
        else:
            merged.append([lo, upper, list(idx)])
    if len(merged) > 1 and len(merged[-1][2]) < min_sentences:
        _, upper, idx = merged.pop()
        merged[-1][1], merged[-1][2] = upper, merged[-1][2] + idx
    return merged


def bleu_by_length(
    hyps: Sequence[str],
    refs: Sequence[str],
    src_lens: Sequence[int],
    edges: Sequence[int] = EDGES,
    min_sentences: int = MIN_SENTENCES,
) -> list[dict]:
    """Tokenised BLEU of each non-empty source-length bucket: ``{bucket, upper, n, bleu}``.
    Buckets of fewer than ``min_sentences`` sentences are merged with their neighbours (a BLEU
    of two sentences reads as a finding and is noise); 0 keeps every bucket."""
    if not len(hyps) == len(refs) == len(src_lens):
        raise ValueError(f"{len(hyps)} hypotheses, {len(refs)} references, {len(src_lens)} lengths")
    rows = []
    for label, upper, idx in length_groups(src_lens, edges, min_sentences):
        bleu = corpus_bleu_tok([hyps[i] for i in idx], [refs[i] for i in idx])
        rows.append({"bucket": label, "upper": upper, "n": len(idx), "bleu": bleu})
    return rows


def length_groups(
    lengths: Sequence[int], edges: Sequence[int], min_sentences: int = 0, first: int = 0
) -> list[tuple[str, int | None, list[int]]]:
    """Sentence indices grouped by length at ``edges``: ``(label, upper, indices)`` for each
    non-empty group, the first labelled from ``first`` up. Groups of fewer than
    ``min_sentences`` sentences are merged with their neighbours (0: none)."""
    bounds = list(zip([first, *edges], [*edges, None]))
    groups: list[list] = [[lo, upper, []] for lo, upper in bounds]  # [lo, upper, indices]
    for i, n in enumerate(lengths):
        k = next(j for j, (_, upper) in enumerate(bounds) if upper is None or n < upper)
        groups[k][2].append(i)
    groups = _merge_small([g for g in groups if g[2]], min_sentences)
    return [(_range_label(lo, upper), upper, idx) for lo, upper, idx in groups]


def tick_labels(rows: Sequence[dict]) -> list[str]:
    """The x-axis labels of Figure 6: each bucket with its number of sentences."""
    return [f"{r['bucket']}\n(n={r['n']})" for r in rows]


def mean_buckets(runs: Sequence[Sequence[dict]]) -> list[dict]:
    """Several runs' :func:`bleu_by_length` rows on the same sentences (seeds of one system)
    as one: the mean BLEU of each bucket, and ``bleu_sd`` (sample sd) when there are two or more."""
    import statistics

    if not runs or any(
        [r["bucket"] for r in rows] != [r["bucket"] for r in runs[0]] for rows in runs
    ):
        raise ValueError("runs to average must share their length buckets (same test sentences)")
    out = []
    for k, first in enumerate(runs[0]):
        bleus = [rows[k]["bleu"] for rows in runs]
        row = {**first, "bleu": statistics.fmean(bleus)}
        if len(bleus) > 1:
            row["bleu_sd"] = statistics.stdev(bleus)
        out.append(row)
    return out


def markdown_table(rows: Sequence[dict]) -> str:
    lines = ["| source length | sentences | BLEU |", "|---|---:|---:|"]
    lines += [f"| {r['bucket']} | {r['n']} | {r['bleu']:.2f} |" for r in rows]
    return "\n".join(lines)


def plot_bleu_by_length(
    systems: Mapping[str, Sequence[dict]], path: str | Path, title: str = "BLEU by source length"
) -> Path:
    """Figure 6: one line per system, buckets on the x axis. Writes ``path`` (PNG/PDF)."""
    from luong_lit.metrics.plotting import pyplot, save_with_legend

    fig, ax = pyplot().subplots(figsize=(6, 4))
    labels: list[str] = []
    for rows in systems.values():
        for r in rows:
            if r["bucket"] not in labels:
                labels.append(r["bucket"])
    for name, rows in systems.items():
        xs = [labels.index(r["bucket"]) for r in rows]
        sd = [r.get("bleu_sd") or 0.0 for r in rows]  # mean over seeds: error bars of ± sd
        ax.errorbar(xs, [r["bleu"] for r in rows], yerr=sd, marker="o", capsize=3, label=name)
    counts = {tuple((r["bucket"], r["n"]) for r in rows) for rows in systems.values()}
    if len(counts) == 1:  # one test set: its sentence counts under the buckets
        labels = tick_labels(next(iter(systems.values())))
    ax.set_xticks(range(len(labels)), labels)
    ax.set_xlabel("source sentence length (sentences per bucket)")
    ax.set_ylabel("BLEU")
    ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3)
    return save_with_legend(fig, ax, path, dpi=100)  # under the plot: it never covers the lines
