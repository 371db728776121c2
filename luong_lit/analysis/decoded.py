"""What the notebook decodes of a run: its checkpoint (:func:`checkpoint_of`), the model and
datamodule loaded from it (:func:`load_run_model`), and BLEU by source length (Figure 6) from
the run's ``evaluate`` report, falling back to decoding the dev set greedily when the run has no
report yet (:func:`length_buckets`). A run without a checkpoint (or report) is left out of what
needs it, and named in one line (:func:`decodable`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from luong_lit.analysis.runs import own_evals

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
    words = model.inference.split(dev, max_sentences=max_sentences).words
    hyps = bleu_lines(words, dm.tokenizers.get("tgt"))
    refs = bleu_lines(dev.tgt_tokens[: len(hyps)], dm.tokenizers.get("tgt"))
    return bleu_by_length(hyps, refs, [len(s) for s in dev.src_tokens[: len(hyps)]])


def cell_buckets(runs: Sequence[Path], max_sentences: int | None = None) -> list[dict]:
    """Figure 6's rows for one cell: :func:`length_buckets` of each run, mean ± sd over seeds."""
    from luong_lit.metrics.buckets import mean_buckets

    return mean_buckets([length_buckets(r, max_sentences) for r in runs])
