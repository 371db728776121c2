"""The two ways to smooth a model, compared on the main job: the last epochs' weights averaged
(``python -m luong_lit average``) and the exponential moving average of the weights kept while
training (``callbacks.ema.decay``).

    python -m scripts.studies.smoothing EPOCHS_RUN EMA_RUN [--last 3] [--out OUT] [--threads 2]

``EPOCHS_RUN``: the main job trained with ``callbacks.epoch_checkpoints.every_n_epochs=1``;
``EMA_RUN``: the main job trained with ``callbacks.ema.decay=D`` (both from one seed). Each
model is decoded by ``python -m luong_lit evaluate`` (beam 5, the checkpoint's test sets, the
lines kept under ``OUT/<name>/``): the plain run's best checkpoint, the average of its last
``--last`` epoch checkpoints, and the EMA run's best checkpoint (its averaged weights). Prints
one JSON line a model: its tokenised beam BLEU and test perplexity.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from luong_lit.reports import Evaluation


def evaluate(ckpt: Path, out: Path, threads: int) -> dict:
    """``ckpt``'s beam BLEU and perplexity, read from ``out`` where it was evaluated before."""
    if not list(out.glob("eval_*.json")):
        _run_evaluate(ckpt, out, threads)
    report = Evaluation.read(next(out.glob("eval_*.json")))
    if report.beam is None:
        raise SystemExit(f"{report.path}: no BLEU in it")
    return {"bleu_beam": report.beam.bleu_tok, "ppl": list(report.ppl) or None}


def _run_evaluate(ckpt: Path, out: Path, threads: int) -> None:
    cmd = [sys.executable, "-m", "luong_lit", "evaluate", str(ckpt), "--out", str(out),
           "--threads", str(threads), "--quiet"]  # fmt: skip
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("epochs_run", type=Path)
    ap.add_argument("ema_run", type=Path)
    ap.add_argument("--last", type=int, default=3, help="epoch checkpoints averaged")
    ap.add_argument("--out", type=Path, default=Path("logs/smoothing"))
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    epochs = sorted((args.epochs_run / "checkpoints" / "epochs").glob("e*.ckpt"))[-args.last :]
    averaged = args.out / f"average_last{args.last}.ckpt"
    if not averaged.is_file():
        args.out.mkdir(parents=True, exist_ok=True)
        cmd = [sys.executable, "-m", "luong_lit", "average", *map(str, epochs), "-o", str(averaged)]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    models = {
        "best checkpoint (no smoothing)": args.epochs_run / "checkpoints" / "best.ckpt",
        f"average of epochs {', '.join(p.stem for p in epochs)}": averaged,
        "EMA (best checkpoint of the EMA run)": args.ema_run / "checkpoints" / "best.ckpt",
    }
    for i, (name, ckpt) in enumerate(models.items()):
        if not ckpt.is_file():
            print(json.dumps({"model": name, "checkpoint": str(ckpt), "missing": True}))
            continue
        found = evaluate(ckpt, args.out / f"model{i}", args.threads)
        print(json.dumps({"model": name, "checkpoint": str(ckpt), **found}))


if __name__ == "__main__":
    main()
