"""Time from a training process's start to its first batch, for any config, in any checkout.

    python -m scripts.benchmarks.startup [--repo OTHER_CHECKOUT] [--rounds 3] [-- OVERRIDES ...]

Each round starts a fresh Python process in ``--repo`` (this checkout by default) that imports
the kit, composes ``conf/train.yaml`` with the overrides (the main job without any), builds the
run as ``python -m luong_lit.train`` does (datamodule set up, model, trainer) and draws the first
training batch. The wall time of that process is printed per round, with the median. One
unmeasured round comes first, so caches (a prepared store, a learned recaser) exist, as for any
run after the first. With ``--repo`` pointing at a checkout of an older commit, the two are
compared side by side: run them in alternating order on a quiet machine.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CHILD = """
import sys
from luong_lit.config import compose  # the checkout's own configs and resolvers
from luong_lit.training.build import build
from luong_lit.training.run_folder import RunFolder
cfg = compose([f"paths.output_dir={sys.argv[1]}", *sys.argv[2:]])
dm, model, trainer = build(cfg, RunFolder.open(cfg))
batch = next(iter(dm.train_dataloader()))
print("first batch", type(batch).__name__)
"""


def one_start(repo: Path, overrides: list[str]) -> float:
    with tempfile.TemporaryDirectory() as out:
        cmd = [
            sys.executable,
            "-W",
            "ignore",
            "-c",
            CHILD,
            out,
            *overrides,
        ]
        t0 = time.perf_counter()
        res = subprocess.run(cmd, cwd=repo, capture_output=True, text=True)
        wall = time.perf_counter() - t0
    if res.returncode != 0 or "first batch" not in res.stdout:
        sys.exit(f"the run in {repo} did not start:\n{res.stderr[-2000:]}")
    return wall


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repo", type=Path, default=REPO)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("overrides", nargs="*")
    args = ap.parse_args(argv)
    repo = args.repo.resolve()
    one_start(repo, args.overrides)  # caches, as for every run after the first
    walls = [round(one_start(repo, args.overrides), 2) for _ in range(args.rounds)]
    print(json.dumps({"repo": repo.name, "seconds": walls, "median": statistics.median(walls)}))


if __name__ == "__main__":
    main()
