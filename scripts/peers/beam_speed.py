#!/usr/bin/env python3
"""Beam-5 decoding speed beside OpenNMT-py 3.5.1 and Joey NMT 2.3.0 on "m30k_small".

    python -m scripts.peers.beam_speed --out results/beam_peers --peers-dir PEERS_DIR \
        [--train-epochs 1] [--rounds 3] [--beam 5] [--systems onmt,ours_b30,ours_b30_int8]
        [--ours-ckpt RUN/checkpoints/best.ckpt] [--gpu]

Models
------
Each system first trains its own ``m30k_small`` model (the configs of
``scripts/peers/`` and our ``conf/experiment/m30k_small.yaml``) for the same number of
epochs (``--train-epochs``, default 1: 454 steps of 64 sentences; Joey NMT keeps its
step-450 checkpoint, where it validates).  The models are cached under ``OUT/models`` and
reused by later invocations; ``--ours-ckpt`` decodes a model of ours trained elsewhere
(for example the main job's ``best.ckpt``) instead.  Decoding speed depends on output lengths,
so the report gives each system's mean output length and BLEU beside its speed.

Decoding
--------
Rounds alternate the systems (onmt, joey, ours at batch 30, ours at batch 64).  Every
process gets ``--threads`` torch threads.  Each system is timed by its own timer, which
starts after the model is loaded:

* OpenNMT-py: ``onmt_translate -report_time``, "Average translation time (ms)", at
  ``-batch_size 30`` (sentences), ``-max_length`` left at its default.
* Joey NMT: ``joeynmt test`` with the test set as its only data set, "Generation took
  X[sec]", at its config's ``testing.batch_size`` 64 (sentences), ``max_output_length`` 100.
  (``joeynmt translate`` on stdin ran at a quarter of that speed here.)
* ours: ``python -m scripts.benchmarks.beam_speed --single-limit 0`` (decode_corpus only), batch 30
  and 64, the default length bounds (docs/paper_notes.md §11); ``_w2`` systems split the batches
  between two forked processes of one thread each (``--workers 2``), timed from before
  the processes start.

The figure per system is the median of its rounds.  Only the Python standard library is
used by this harness; BLEU is scored by our package (tokenised, multi-bleu style).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

from scripts.peers.throughput import PEER_BOOT, PEER_CFG_DIR, REPO, _env, _version, fill_config

ONMT_AVG_MS = re.compile(r"Average translation time \(ms\):\s*([\d.]+)")
JOEY_GEN = re.compile(r"Generation took ([\d.]+)\[sec\]")
SYSTEMS = (
    "onmt",
    "joey",
    "ours_b30",
    "ours_b64",
    "ours_b30_int8",
    "ours_b64_int8",
    "ours_b30_int8all",
    "ours_b64_int8all",
    "ours_b30_w2",
    "ours_b64_w2",
)
DEFAULT_SYSTEMS = "onmt,joey,ours_b30,ours_b64"


def _run(cmd, log: Path, threads: int, cwd=REPO, timeout=3600) -> str:
    """Run ``cmd``; its output goes to ``log`` and is returned."""
    with open(log, "w", encoding="utf-8") as f:
        proc = subprocess.run(
            cmd,
            cwd=cwd,
            env=_env(threads),
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            timeout=timeout,
        )
        f.write(proc.stdout)
    if proc.returncode != 0:
        raise RuntimeError(f"exit {proc.returncode}: {' '.join(map(str, cmd))}; see {log}")
    return proc.stdout


def train_models(args) -> dict:
    """Train (or reuse) one model per system; returns their checkpoint paths."""
    models, steps = args.out / "models", 454 * args.train_epochs
    peer_data = args.peers_dir / "data"
    ckpts = {
        "onmt": models / "onmt" / f"model_step_{steps}.pt",
        "joey": models / "joey" / "joey_model" / "best.ckpt",
        "ours": args.ours_ckpt or models / "ours" / "checkpoints" / "last.ckpt",
    }
    wanted = {s.split("_")[0] for s in args.systems}
    ckpts = {k: v for k, v in ckpts.items() if k in wanted}
    for system, ckpt in ckpts.items():
        if ckpt.exists():
            continue
        run_dir = models / system
        run_dir.mkdir(parents=True, exist_ok=True)
        print(f"training {system} for {args.train_epochs} epoch(s) ...", flush=True)
        if system == "ours":
            cmd = [
                str(args.ours_python),
                "-m",
                "luong_lit",
                "train",
                f"trainer.max_epochs={args.train_epochs}",
                "test_after_training=false",
                f"hydra.run.dir={run_dir}",
                *(["trainer=gpu"] if args.gpu else []),
            ]
        else:
            cfg = run_dir / f"{system}_m30k_small.yaml"
            text = fill_config(PEER_CFG_DIR / cfg.name, cfg, peer_data, run_dir)
            py = str(args.peers_dir / f"{system}-venv" / "bin" / "python")
            if system == "onmt":
                cmd = [
                    py,
                    str(PEER_BOOT),
                    str(args.threads),
                    "onmt.bin.train",
                    "-config",
                    str(cfg),
                    "-train_steps",
                    str(steps),
                    "-save_checkpoint_steps",
                    str(steps),
                    "-valid_steps",
                    str(steps),
                    "-save_model",
                    str(run_dir / "model"),
                    *(["-gpu_ranks", "0", "-world_size", "1"] if args.gpu else []),
                ]
            else:
                cfg.write_text(
                    re.sub(r"(?m)^(\s*)epochs:\s*\d+", rf"\g<1>epochs: {args.train_epochs}", text),
                    encoding="utf-8",
                )
                cmd = [
                    py,
                    str(PEER_BOOT),
                    str(args.threads),
                    "joeynmt",
                    "train",
                    str(cfg),
                    "--skip-test",
                ]
        _run(
            cmd,
            run_dir / "train_stdout.log",
            args.threads,
            cwd=run_dir if system != "ours" else REPO,
        )
        if not ckpt.exists():
            raise RuntimeError(f"{system}: training finished without {ckpt}")
    return ckpts


def decode_peer(system: str, args, ckpt: Path, run_dir: Path) -> dict:
    test_src = args.peers_dir / "data" / "m30k" / "test.en"
    py = str(args.peers_dir / f"{system}-venv" / "bin" / "python")
    hyp = run_dir / "hyp.txt"
    n = len(test_src.read_text(encoding="utf-8").splitlines())
    if system == "onmt":
        cmd = [
            py,
            str(PEER_BOOT),
            str(args.threads),
            "onmt.bin.translate",
            "-model",
            str(ckpt),
            "-src",
            str(test_src),
            "-output",
            str(hyp),
            "-beam_size",
            str(args.beam),
            "-batch_size",
            "30",
            "-batch_type",
            "sents",
            "-report_time",
            *(["-gpu", "0"] if args.gpu else []),
        ]
        out = _run(cmd, run_dir / "stdout.log", args.threads)
        seconds = float(ONMT_AVG_MS.findall(out)[-1]) * n / 1000.0
    else:
        cfg_src = args.out / "models" / "joey" / "joey_m30k_small.yaml"
        cfg = run_dir / "joey_test.yaml"
        text = re.sub(
            r"(?m)^(\s*)beam_size:\s*\d+",
            rf"\g<1>beam_size: {args.beam}",
            cfg_src.read_text(encoding="utf-8"),
        )
        # `joeynmt test` on the test set alone (no dev set), as Joey's own test runs time it
        text = re.sub(r"(?m)^(\s*)dev:\s*\S+", rf"\g<1>test: {test_src.with_suffix('')}", text)
        cfg.write_text(
            text.replace("\ntesting:\n", f"\ntesting:\n  load_model: {ckpt}\n", 1), encoding="utf-8"
        )
        out = _run(
            [
                py,
                str(PEER_BOOT),
                str(args.threads),
                "joeynmt",
                "test",
                str(cfg),
                "--output-path",
                str(run_dir / "hyp"),
            ],
            run_dir / "stdout.log",
            args.threads,
        )
        (run_dir / "hyp.test").replace(hyp)
        seconds = float(JOEY_GEN.findall(out)[-1])
    return {"sent_per_s": n / seconds, "seconds": seconds, "sentences": n, "hyp": str(hyp)}


def decode_ours(system: str, args, ckpt: Path, run_dir: Path) -> dict:
    """``system`` is ``ours_b<batch>``, then ``_int8`` (output layer), ``_int8all`` or ``_w2``
    (two worker processes of one thread each)."""
    hyp, parts = run_dir / "hyp.txt", system.split("_")
    cmd = [
        str(args.ours_python),
        "-m",
        "scripts.benchmarks.beam_speed",
        str(ckpt),
        "--beam",
        str(args.beam),
        "--batch-size",
        parts[1][1:],
        "--single-limit",
        "0",
        "--threads",
        str(args.threads),
        "--output",
        str(hyp),
        *(["--device", "cuda"] if args.gpu else []),
    ]
    extra = {
        "int8": ["--int8", "output"],
        "int8all": ["--int8", "all"],
        "w2": ["--workers", "2"],
    }.get(parts[-1], [])
    out = _run(cmd + extra, run_dir / "stdout.log", args.threads)
    res = json.loads(out.strip().splitlines()[-1])
    return {"sent_per_s": res["batched_sent_per_s"], "sentences": res["sentences"], "hyp": str(hyp)}


def score(args, hyp: str) -> dict:
    """Tokenised BLEU and mean length of a hypothesis file, scored by our package."""
    code = (
        "import json, sys\nfrom luong_lit.metrics import corpus_bleu_tok\n"
        "h = open(sys.argv[1], encoding='utf-8').read().splitlines()\n"
        "r = open(sys.argv[2], encoding='utf-8').read().splitlines()\n"
        "print(json.dumps({'bleu_tok': round(corpus_bleu_tok(h, r), 2),"
        " 'mean_output_len': round(sum(len(x.split()) for x in h) / len(h), 2)}))"
    )
    ref = args.peers_dir / "data" / "m30k" / "test.de"
    out = subprocess.run(
        [str(args.ours_python), "-c", code, hyp, str(ref)],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def write_summary(args, runs: list, versions: dict) -> dict:
    med = {
        s: statistics.median(
            r["sent_per_s"] for r in runs if r["system"] == s and "sent_per_s" in r
        )
        for s in SYSTEMS
        if any(r["system"] == s and "sent_per_s" in r for r in runs)
    }
    quality = {s: next((r for r in runs if r["system"] == s and "bleu_tok" in r), {}) for s in med}
    ratios = {}
    for peer, batch in (("onmt", "b30"), ("joey", "b64")):  # each peer at its own batch size
        for kind, label in (
            ("", ""),
            ("_int8", ", int8"),
            ("_int8all", ", int8 all"),
            ("_w2", ", 2 workers"),
        ):
            if f"ours_{batch}{kind}" in med and peer in med:
                ratios[f"ours({batch}{label})/{peer}({batch})"] = (
                    med[f"ours_{batch}{kind}"] / med[peer]
                )
    summary = {
        "benchmark": "m30k_small beam decoding of test_2016_flickr",
        "beam": args.beam,
        "train_epochs": args.train_epochs,
        "rounds": args.rounds,
        "threads": args.threads,
        "device": "cuda" if args.gpu else "cpu",
        "versions": versions,
        "median_sent_per_s": med,
        "ratios": ratios,
        "quality": {
            s: {k: q.get(k) for k in ("bleu_tok", "mean_output_len")} for s, q in quality.items()
        },
        "runs": runs,
    }
    (args.out / "peer_beam_speed.json").write_text(json.dumps(summary, indent=2) + "\n")
    lines = [
        f"# m30k_small beam-{args.beam} decoding, test_2016_flickr (sentences/s)",
        "",
        f"Models trained {args.train_epochs} epoch(s) each; median of {args.rounds} "
        f"alternating rounds; {args.threads} threads.",
        "",
        "| system | median sent/s | BLEU (tok) | mean output length |",
        "|---|---|---|---|",
    ]
    for s, v in med.items():
        q = summary["quality"][s]
        lines.append(f"| {s} | {v:.1f} | {q['bleu_tok']} | {q['mean_output_len']} |")
    lines += ["", "| ratio | value |", "|---|---|"] + [
        f"| {k} | {v:.2f} |" for k, v in ratios.items()
    ]
    (args.out / "peer_beam_speed.md").write_text("\n".join(lines) + "\n")
    return summary


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True, help="results folder (models cached below)")
    ap.add_argument(
        "--peers-dir", type=Path, default=Path(os.environ.get("PEERS_DIR", REPO / ".peers"))
    )
    ap.add_argument("--ours-python", type=Path, default=REPO / ".venv" / "bin" / "python")
    ap.add_argument("--train-epochs", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--beam", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument(
        "--systems", default=DEFAULT_SYSTEMS, help=f"comma-separated, from {','.join(SYSTEMS)}"
    )
    ap.add_argument(
        "--ours-ckpt", type=Path, help="decode this checkpoint instead of training ours"
    )
    ap.add_argument("--gpu", action="store_true", help="train and decode on CUDA device 0")
    args = ap.parse_args(argv)
    args.systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    if unknown := sorted(set(args.systems) - set(SYSTEMS)):
        ap.error(f"--systems: unknown {unknown}; choose from {', '.join(SYSTEMS)}")
    if args.gpu and [s for s in args.systems if s == "joey" or "int8" in s or "w2" in s]:
        ap.error("--gpu: onmt and ours_b<N> only (int8 and worker processes are CPU forms)")
    args.out, args.peers_dir = args.out.resolve(), args.peers_dir.resolve()
    args.out.mkdir(parents=True, exist_ok=True)
    for peer in sorted({"onmt", "joey"} & set(args.systems)):
        if not (args.peers_dir / f"{peer}-venv" / "bin" / "python").exists():
            sys.exit(f"{args.peers_dir}/{peer}-venv missing: run scripts/peers/setup.sh")
    pkgs = {"onmt": "OpenNMT-py", "joey": "joeynmt"}
    versions = {
        p: _version(args.peers_dir / f"{p}-venv/bin/python", ["torch", pkgs[p]])
        for p in pkgs
        if p in args.systems
    }
    versions["ours"] = _version(args.ours_python, ["torch", "luong_lit"])
    ckpts = train_models(args)
    runs = []
    for rnd in range(1, args.rounds + 1):
        for s in args.systems:
            run_dir = args.out / "runs" / f"r{rnd}_{s}"
            run_dir.mkdir(parents=True, exist_ok=True)
            try:
                res = (
                    decode_ours(s, args, ckpts["ours"], run_dir)
                    if s.startswith("ours")
                    else decode_peer(s, args, ckpts[s], run_dir)
                )
                if rnd == 1:
                    res.update(score(args, res["hyp"]))
                print(f"[round {rnd}] {s}: {res['sent_per_s']:.1f} sent/s", flush=True)
            except Exception as e:  # noqa: BLE001 - keep going, record the failure
                res = {"error": str(e)}
                print(f"[round {rnd}] {s}: FAILED: {e}", flush=True)
            runs.append({"system": s, "round": rnd, **res})
    summary = write_summary(args, runs, versions)
    print(
        json.dumps({"median_sent_per_s": summary["median_sent_per_s"], "ratios": summary["ratios"]})
    )
    return 1 if any("error" in r for r in runs) else 0


if __name__ == "__main__":
    sys.exit(main())
