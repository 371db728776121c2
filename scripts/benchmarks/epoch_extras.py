"""What a validation's pictures and checkpoints cost the training thread: written and drawn on
it (``checkpoint_writes=inline``, ``draw=inline``: a CPU's default) and off it (``background``:
a GPU's default).

    python -m scripts.benchmarks.epoch_extras CKPT [--repeats 5] [--steps 10] [--device cuda]

Per validation a run writes two checkpoints (``best.ckpt``, ``last.ckpt``) and draws three
heatmaps (``callbacks.attention_heatmaps``). For each way, alternated ``--repeats`` times in
one process: the seconds the training thread spends on them (``on_thread_s``); since the
threads share the interpreter with training, the seconds to the end of ``--steps`` training
steps run right after them (``with_steps_s``, the pictures and writes going on beside the
steps in the background); and until all is on disk (``all_written_s``). Medians; ``CKPT`` is
any trained checkpoint (its model draws the heatmaps and trains, its contents are written).
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import torch


def one_validation(
    ckpt: dict, net, out: Path, background: bool, steps
) -> tuple[float, float, float]:
    from luong_lit.analysis.figures import heatmap_panels, save_attention
    from luong_lit.nn.modes import evaluating
    from luong_lit.training.checkpoint_io import AtomicCheckpointIO

    io, pool = AtomicCheckpointIO("background" if background else "inline"), ThreadPoolExecutor(1)
    src, tgt = list(range(4, 24)), list(range(4, 22))
    words = [f"s{i}" for i in src], [f"t{i}" for i in tgt]
    start = time.perf_counter()
    drawn = []
    with evaluating(net):
        for i in range(3):
            panels = heatmap_panels({f"dev {i}": net}, src, tgt)
            if background:
                drawn.append(pool.submit(save_attention, panels, *words, out / f"dev{i}.png"))
            else:
                save_attention(panels, *words, out / f"dev{i}.png")
    for name in ("best.ckpt", "last.ckpt"):
        io.save_checkpoint(ckpt, out / name)
    on_thread = time.perf_counter() - start
    steps()
    with_steps = time.perf_counter() - start
    io.teardown()  # waits, and ends its writer
    for d in drawn:
        d.result()
    pool.shutdown()
    return on_thread, with_steps, time.perf_counter() - start


def training_steps(net, n: int, device: str):
    """``n`` steps of the fast engine on one batch of 64 random 13-word pairs, as a closure."""
    from luong_lit.engines import FastEngine
    from scripts.benchmarks.host_reads import batch

    V = min(net.encoder.embedding.num_embeddings, net.decoder.embedding.num_embeddings)
    engine, b = FastEngine(), batch(64, 13, V).to(device)
    engine.setup(device)
    opt = torch.optim.Adam(net.parameters(), 1e-4)

    def run() -> None:
        net.train()
        for _ in range(n):
            opt.zero_grad()
            engine.training_loss(net, b, 0.0, lambda batch, k: len(batch)).backward()
            opt.step()
        if device != "cpu":
            torch.cuda.synchronize()

    return run


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("ckpt")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--steps", type=int, default=10, help="training steps after the extras")
    ap.add_argument("--out", default=None, help="where to write (default: a temporary folder)")
    ap.add_argument("--device", default="cpu", help="where it trains and its checkpoint is")
    args = ap.parse_args()
    from luong_lit.checkpoint import load_model

    net = load_model(args.ckpt)[0].to(args.device)
    ckpt = torch.load(args.ckpt, weights_only=True, map_location=args.device)  # as a run saves
    steps = training_steps(net, args.steps, args.device)
    found: dict[str, list[tuple[float, float, float]]] = {"inline": [], "background": []}
    with tempfile.TemporaryDirectory(dir=args.out) as tmp:
        for _ in range(args.repeats):
            for way in found:
                found[way].append(one_validation(ckpt, net, Path(tmp), way == "background", steps))
    size = Path(args.ckpt).stat().st_size
    print(json.dumps({"checkpoint_mb": round(size / 2**20, 1), "repeats": args.repeats,
                      "steps": args.steps, **{way: {
        key: round(statistics.median(r[k] for r in runs), 3)
        for k, key in enumerate(("on_thread_s", "with_steps_s", "all_written_s"))}
        for way, runs in found.items()}}, indent=1))  # fmt: skip


if __name__ == "__main__":
    main()
