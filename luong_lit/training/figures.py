"""The figures the final test reports, kept as computed: each is logged (for the loggers and
``trainer.test``'s return, in float32) and kept exact on the module (``test_figures``), from
which ``results.json`` is written, so that it equals ``evaluate`` of the checkpoint it names."""

from __future__ import annotations


def test_figure(pl_module, name: str, metric: str, value: float) -> None:
    """Log ``test/NAME/METRIC`` and keep its exact value for ``results.json``."""
    pl_module.log(f"test/{name}/{metric}", value, add_dataloader_idx=False)
    kept = pl_module.__dict__.setdefault("test_figures", {})
    kept.setdefault(name, {})[metric] = float(value)
