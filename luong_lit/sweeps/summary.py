"""The closing line of a ``-m`` sweep (:class:`SweepSummary`, a Hydra callback of
``conf/hydra/default.yaml``): its folder, and the command that compares its runs."""

from __future__ import annotations

from typing import Any

from hydra.experimental.callback import Callback


class SweepSummary(Callback):
    """After the last job of a sweep: where its runs are and how to compare them."""

    def on_multirun_end(self, config: Any, **kwargs: Any) -> None:
        where = config.hydra.sweep.dir
        print(f"sweep folder: {where}; compare its runs: python -m luong_lit report {where}")
