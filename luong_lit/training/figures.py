"""The figures the final test reports, kept as computed: each is logged (for the loggers and
``trainer.test``'s return, in float32) and kept exact on the module (``test_figures``), from
which ``results.json`` is written, so that it equals ``evaluate`` of the checkpoint it names."""

from __future__ import annotations

from typing import Any

import torch

from luong_lit.metrics.perplexity import ppl_from_nll


def test_figure(pl_module, name: str, metric: str, value: float) -> None:
    """Log ``test/NAME/METRIC`` and keep its exact value for ``results.json``."""
    pl_module.log(f"test/{name}/{metric}", value, add_dataloader_idx=False)
    kept = pl_module.__dict__.setdefault("test_figures", {})
    kept.setdefault(name, {})[metric] = float(value)


def test_perplexities(pl_module, sums: dict[int, tuple[Any, int, int]]) -> None:
    """``test/<name>/ppl`` for every test set of the datamodule (in ``trainer.test``) from its
    summed NLL, tokens and sentences (``sums``, by test set), added over the ranks, and the
    sentences it read (``sentences_ppl``: all of them unless ``limit_test_batches``)."""
    trainer = pl_module.trainer
    names = list(getattr(trainer.datamodule, "test_spec", None) or [])
    every = range(max([len(names), *(i + 1 for i in sums)]))
    for idx in every:  # a rank with no batch of a set still takes part in its sum
        nll, tokens, sentences = sums.get(idx, (0.0, 0, 0))
        name = names[idx] if idx < len(names) else str(idx)
        total = torch.stack([torch.as_tensor(nll, dtype=torch.float64).cpu(),
                             torch.tensor(float(tokens), dtype=torch.float64),
                             torch.tensor(float(sentences), dtype=torch.float64)])  # fmt: skip
        if trainer.world_size > 1:  # each rank read its share of the test set
            total = trainer.strategy.reduce(total.to(pl_module.device), reduce_op="sum")
        nll, tokens = float(total[0]), float(total[1])
        if tokens == 0:  # nothing of this set was read
            continue
        test_figure(pl_module, name, "ppl", ppl_from_nll(nll, tokens))
        test_figure(pl_module, name, "sentences_ppl", float(total[2]))
