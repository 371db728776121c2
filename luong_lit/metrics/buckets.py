"""BLEU by source-sentence length (the paper's Figure 6), as rows and as a plot."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from luong_lit.metrics.bleu import corpus_bleu_tok

EDGES = (10, 20, 30, 40, 50, 60, 70)  # Figure 6 groups sentences in steps of 10 words


def bucket_label(n: int, edges: Sequence[int] = EDGES) -> str:
    lo = 0
    for hi in edges:
        if n < hi:
            return f"{lo}-{hi - 1}" if lo else f"<{hi}"
        lo = hi
    return f"{edges[-1]}+"


def bleu_by_length(
    hyps: Sequence[str], refs: Sequence[str], src_lens: Sequence[int], edges: Sequence[int] = EDGES
) -> list[dict]:
    """Tokenised BLEU of each non-empty source-length bucket: ``{bucket, upper, n, bleu}``."""
    if not len(hyps) == len(refs) == len(src_lens):
        raise ValueError(f"{len(hyps)} hypotheses, {len(refs)} references, {len(src_lens)} lengths")
    groups: dict[str, list[int]] = {}
    for i, n in enumerate(src_lens):
        groups.setdefault(bucket_label(n, edges), []).append(i)
    order = [bucket_label(e - 1, edges) for e in edges] + [f"{edges[-1]}+"]
    rows = []
    for label, upper in zip(order, list(edges) + [None]):
        idx = groups.get(label)
        if idx:
            bleu = corpus_bleu_tok([hyps[i] for i in idx], [refs[i] for i in idx])
            rows.append({"bucket": label, "upper": upper, "n": len(idx), "bleu": bleu})
    return rows


def markdown_table(rows: Sequence[dict]) -> str:
    lines = ["| source length | sentences | BLEU |", "|---|---:|---:|"]
    lines += [f"| {r['bucket']} | {r['n']} | {r['bleu']:.2f} |" for r in rows]
    return "\n".join(lines)


def plot_bleu_by_length(
    systems: Mapping[str, Sequence[dict]], path: str | Path, title: str = "BLEU by source length"
) -> Path:
    """Figure 6: one line per system, buckets on the x axis. Writes ``path`` (PNG/PDF)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    labels: list[str] = []
    for rows in systems.values():
        for r in rows:
            if r["bucket"] not in labels:
                labels.append(r["bucket"])
    for name, rows in systems.items():
        xs = [labels.index(r["bucket"]) for r in rows]
        ax.plot(xs, [r["bleu"] for r in rows], marker="o", label=name)
    ax.set_xticks(range(len(labels)), labels)
    ax.set_xlabel("source sentence length")
    ax.set_ylabel("BLEU")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path
