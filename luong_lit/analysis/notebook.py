"""Helpers for the analysis notebook: load run directories and draw the paper's figures.

Everything here reads what ``train``, ``evaluate`` and ``align`` wrote into run directories,
falling back to decoding the dev set when a run has no evaluation report yet.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from luong_lit.analysis.runs import run_label


def find_runs(patterns: Sequence[str]) -> list[Path]:
    """Run directories (those with ``.hydra/config.yaml``) matching glob patterns or paths."""
    runs: list[Path] = []
    for pattern in patterns:
        p = Path(pattern)
        candidates = [p] if p.exists() else sorted(Path().glob(pattern))
        runs += [c for c in candidates if (c / ".hydra" / "config.yaml").is_file()]
    return runs


def load_run_model(run: Path):
    """``(net, datamodule)`` of a run's best checkpoint, with its dev split loaded."""
    from luong_lit.checkpoint import load_model
    from luong_lit.data.model_data import datamodule_for

    ckpt = run / "checkpoints" / "best.ckpt"
    if not ckpt.is_file():
        ckpt = run / "checkpoints" / "last.ckpt"
    net, _, _, meta = load_model(ckpt)
    return net, datamodule_for(meta)


def length_buckets(run: Path, max_sentences: int | None = None) -> list[dict]:
    """BLEU by source length: from the run's ``eval_*.json``, else greedy on its dev set."""
    evals = sorted(run.glob("eval_*.json"))
    if evals:
        return json.loads(evals[0].read_text())["length_buckets"]
    from luong_lit.evaluation import translate_split
    from luong_lit.metrics.bleu import bleu_lines
    from luong_lit.metrics.buckets import bleu_by_length

    net, dm = load_run_model(run)
    dev = dm.splits["dev"]
    words = translate_split(net, dev, dm.tgt_vocab, max_sentences=max_sentences).words
    hyps = bleu_lines(words, dm.tokenizers.get("tgt"))
    refs = bleu_lines(dev.tgt_tokens[: len(hyps)], dm.tokenizers.get("tgt"))
    return bleu_by_length(hyps, refs, [len(s) for s in dev.src_tokens[: len(hyps)]])


def aer_table(runs: Sequence[Path]) -> str:
    """Table 6 in Markdown: each run's AER (from ``align.json``) and the baselines beside it."""
    lines = ["| system | AER |", "|---|---:|"]
    baselines: dict[str, float] = {}
    for run in runs:
        path = run / "align.json"
        if path.is_file():
            rep = json.loads(path.read_text())
            lines.append(f"| {run_label(run)} | {rep['aer']:.3f} |")
            baselines.update(rep.get("baselines", {}))
    lines += [f"| {name} | {value:.3f} |" for name, value in baselines.items()]
    return "\n".join(lines) + "\n"


def heatmaps_side_by_side(runs: Sequence[Path], sentence: int = 0, max_len: int = 30):
    """One figure with the forced-decoding attention of each run on the same dev sentence."""
    from luong_lit.analysis.figures import attention_figure
    from luong_lit.training.heatmaps import heatmap_panels

    panels, words = [], None
    for run in runs:
        net, dm = load_run_model(run)
        if net.attention is None:
            continue
        dev = dm.splits["dev"]
        src_ids, tgt_ids = dev.src_ids[sentence][:max_len], dev.tgt_ids[sentence][:max_len]
        panels += heatmap_panels({run_label(run): net}, src_ids, tgt_ids)
        words = (dev.src_tokens[sentence][:max_len], dev.tgt_tokens[sentence][:max_len])
    if not panels:
        raise ValueError("none of the runs has an attention model")
    return attention_figure(panels, *words)
