#!/usr/bin/env python3
"""Training-throughput comparison with two peer toolkits on "m30k_small".

Systems
-------
``onmt``  OpenNMT-py 3.5.1, config ``scripts/peers/onmt_m30k_small.yaml``
``joey``  Joey NMT 2.3.0,   config ``scripts/peers/joey_m30k_small.yaml``
``ours``  this package, via ``python -m scripts.benchmarks.ours_window --steps N --warmup W``

The peers are installed by ``scripts/peers/setup.sh`` into
``$PEERS_DIR/{onmt,joey}-venv`` (data and vocabularies in ``$PEERS_DIR/data``).

Protocol
--------
Each *run* trains one system from scratch (fixed seed, so every run sees the
same batches) for ``--warmup`` steps, then measures one window of ``--steps``
optimizer steps (default 20 + 200).  Runs alternate systems:
round 1 = onmt, joey, ours; round 2 = the same; round 3 = the same.  The
reported figure per system is the median of its ``--rounds`` windows, plus the
ratios ours/onmt and ours/joey.  Every process gets ``OMP_NUM_THREADS`` =
``MKL_NUM_THREADS`` = ``--threads`` (default 2); the peers are started through
``scripts/peers/boot.py``, which calls ``torch.set_num_threads(--threads)``
before the toolkit's entry point (neither toolkit sets a thread count itself)
and fixes Joey NMT 2.3.0's crash on unidirectional RNN encoders (see there).
The machine should otherwise be idle: each run records the 1-minute load
average before and after it, so contended runs can be spotted.  A peer is
stopped (its process group is sent SIGTERM) as soon as the log line that
closes the window has been read; the harness refuses a window that would reach
the configs' first validation / checkpoint step (450), so neither falls inside
a window.

What is measured: NON-PAD TARGET tokens per second
--------------------------------------------------
The unit for all three systems is target-side tokens that are not padding:
the target words plus one end-of-sentence token per sentence, without the
begin-of-sentence token (i.e. exactly the positions that enter the loss),
divided by wall-clock seconds of training.

* OpenNMT-py: with ``report_every: 10`` it logs
  ``[<time> INFO] Step s/T; ...; sents: N; bsz: S/T/B; SRC/TGT tok/s; ...``.
  ``TGT tok/s`` is ``Statistics.n_words / elapsed`` where ``n_words`` is the
  number of non-padding positions of ``batch["tgt"][:, 1:]`` (the shifted
  target: words + ``</s>``, no ``<s>``; ``onmt/utils/loss.py::_stats``), summed
  over the steps since the previous report, and ``elapsed`` is the wall time
  since that report (a fresh ``Statistics`` object, whose clock starts at
  construction, replaces the old one right after each report).  The first
  figure, ``SRC tok/s``, counts source tokens and is ignored.  No conversion is
  needed (factor 1).  As a cross-check the harness also derives the token
  count from ``bsz`` (mean target tokens per batch) x number of batches.
* Joey NMT: with ``logging_freq: 10`` it logs
  ``<time> - INFO - joeynmt.training - Epoch e, Step: s, ..., Tokens per Sec: R, Lr: ...``.
  ``R`` is the increase of ``stats.total_tokens`` since the previous report
  divided by the wall time since then minus validation time
  (``joeynmt/training.py::_log_scores``); ``total_tokens`` sums
  ``Batch.ntokens`` = number of non-pad positions of ``trg[:, 1:]`` (words +
  ``</s>``, no ``<s>``; ``joeynmt/batch.py``).  No conversion is needed
  (factor 1).
* ours: the last JSON line printed by ``python -m scripts.benchmarks.ours_window``
  (``{"tgt_tok_per_s": ..., "steps": ...}``) is taken as is; that script is
  expected to count the same unit (non-pad target tokens incl. ``</s>``).

For the peers both reports give a rate per 10-step interval, not a count.  The
harness turns them into one window figure uniformly from the tools' own log
lines: interval i has rate r_i and duration dt_i = difference of the
millisecond timestamps of consecutive report lines, so the window throughput is
``sum_i r_i * dt_i / sum_i dt_i`` = (target tokens in the window) / (wall time
from the report at step W to the report at step W + N).  Rates are printed
rounded to whole tokens/s and timestamps to 1 ms, so this is exact to well
below 0.1 %.  The window includes everything the trainer does per step
(batching on the fly, forward, backward, clipping, optimizer, logging).

Batching caveat
---------------
Non-pad tokens/s depends strongly on how much padding a batch carries.
OpenNMT-py (config as committed) sorts each bucket of 29000 examples by length
before cutting 64-sentence batches: ~95 % of the target positions of a batch
are real tokens on Multi30k.  Joey NMT has no length bucketing: random
64-sentence batches, ~50 % real tokens (the decoder unrolls ~27 steps per batch
instead of ~14).  ``--onmt-arg=-bucket_size --onmt-arg=64`` makes OpenNMT-py
cut unsorted batches in corpus order as well.  Compare "ours" with the peer
whose batching matches its own, or state the difference.

Usage
-----
  python -m scripts.peers.throughput --out results/peers            # all three
  python -m scripts.peers.throughput --systems onmt,joey --out ...  # peers only
  python -m scripts.peers.throughput --rounds 1 --steps 20 --warmup 10 --out ...  # smoke test
  PEERS_DIR=... python -m scripts.peers.throughput ...   (or --peers-dir; default <repo>/.peers)

Only the Python standard library is used; run it with any Python >= 3.8.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import re
import signal
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PEER_CFG_DIR = REPO / "scripts" / "peers"
SYSTEMS = ("onmt", "joey", "ours")

# --------------------------------------------------------------------- parsing
_TS = r"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})"
ONMT_RE = re.compile(
    r"^\[" + _TS + r" INFO\] Step (\d+)(?:/\s*\d+)?;.*?"
    r"sents:\s*(\d+); bsz:\s*(\d+)/\s*(\d+)/\s*(\d+);\s*(\d+)/\s*(\d+) tok/s;"
)
JOEY_RE = re.compile(
    r"^" + _TS + r" - INFO - joeynmt\.training - Epoch\s+(\d+), Step:\s+(\d+),"
    r".*Tokens per Sec:\s+(\d+)"
)


def _ts(s: str) -> float:
    return _dt.datetime.strptime(s, "%Y-%m-%d %H:%M:%S,%f").timestamp()


def parse_onmt_line(line: str):
    m = ONMT_RE.search(line)
    if not m:
        return None
    ts, step, sents, _bsz_src, bsz_tgt, bsz_n, _src_rate, tgt_rate = m.groups()
    n_batches = round(int(sents) / max(int(bsz_n), 1))
    return {
        "step": int(step),
        "ts": _ts(ts),
        "tgt_rate": float(tgt_rate),
        # cross-check only: mean tgt tokens per batch (rounded) x batches
        "tgt_tokens_from_bsz": int(bsz_tgt) * n_batches,
    }


def parse_joey_line(line: str):
    m = JOEY_RE.search(line)
    if not m:
        return None
    ts, _epoch, step, rate = m.groups()
    return {"step": int(step), "ts": _ts(ts), "tgt_rate": float(rate)}


PARSERS = {"onmt": parse_onmt_line, "joey": parse_joey_line}


def window_throughput(records, warmup: int, steps: int) -> dict:
    """Combine per-interval (rate, timestamp) reports into one window figure."""
    by_step = {}
    for r in records:
        by_step.setdefault(r["step"], r)  # first report of a step wins
    start, end = warmup, warmup + steps
    if start not in by_step or end not in by_step:
        raise RuntimeError(f"no report for step {start} and/or {end}; got {sorted(by_step)}")
    inside = sorted(s for s in by_step if start < s <= end)
    prev = by_step[start]
    tokens = 0.0
    bsz_tokens = 0
    intervals = []
    for s in inside:
        r = by_step[s]
        dt = r["ts"] - prev["ts"]
        tokens += r["tgt_rate"] * dt
        bsz_tokens += r.get("tgt_tokens_from_bsz", 0)
        intervals.append({"step": s, "dt_s": round(dt, 3), "tgt_tok_per_s": r["tgt_rate"]})
        prev = r
    seconds = by_step[end]["ts"] - by_step[start]["ts"]
    out = {
        "tgt_tok_per_s": tokens / seconds,
        "window_steps": [start, end],
        "window_s": seconds,
        "tgt_tokens": tokens,
        "intervals": intervals,
    }
    if bsz_tokens:
        out["tgt_tokens_from_bsz"] = bsz_tokens
    return out


# --------------------------------------------------------------------- configs
def _config_int(text: str, key: str):
    m = re.search(rf"^\s*{key}:\s*(\d+)", text, re.M)
    return int(m.group(1)) if m else None


def fill_config(src: Path, dst: Path, peer_data: Path, run_dir: Path) -> str:
    text = src.read_text(encoding="utf-8")
    text = text.replace("${PEER_DATA}", str(peer_data)).replace("${RUN_DIR}", str(run_dir))
    dst.write_text(text, encoding="utf-8")
    return text


def check_window(system: str, text: str, warmup: int, steps: int) -> None:
    if system == "onmt":
        every = _config_int(text, "report_every")
        barriers = [_config_int(text, "valid_steps"), _config_int(text, "save_checkpoint_steps")]
    else:
        every = _config_int(text, "logging_freq")
        barriers = [_config_int(text, "validation_freq"), 454]  # 454 = end of Joey epoch 1
    if not every or warmup % every or steps % every or warmup < every:
        sys.exit(
            f"{system}: --warmup and --steps must be positive multiples of the "
            f"config's logging interval ({every}), warmup >= interval"
        )
    first = min(b for b in barriers if b)
    if warmup + steps >= first:
        sys.exit(
            f"{system}: window ends at step {warmup + steps}, but the config "
            f"validates / checkpoints / changes epoch at step {first}"
        )


# --------------------------------------------------------------------- running
PEER_BOOT = PEER_CFG_DIR / "boot.py"  # sets torch threads (+ Joey unidirectional fix)


def _env(threads: int) -> dict:
    env = dict(os.environ)
    env.update(
        OMP_NUM_THREADS=str(threads),
        MKL_NUM_THREADS=str(threads),
        OPENBLAS_NUM_THREADS=str(threads),
        PYTHONUNBUFFERED="1",
        TOKENIZERS_PARALLELISM="false",
    )
    return env


def _kill_group(proc: subprocess.Popen) -> None:
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=15)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()


def run_peer(system: str, args, run_dir: Path) -> dict:
    run_dir.mkdir(parents=True, exist_ok=True)
    peer_data = args.peers_dir / "data"
    src_cfg = PEER_CFG_DIR / f"{system}_m30k_small.yaml"
    cfg = run_dir / src_cfg.name
    fill_config(src_cfg, cfg, peer_data, run_dir)
    py = args.peers_dir / f"{system}-venv" / "bin" / "python"
    boot = [str(py), str(PEER_BOOT), str(args.threads)]
    if system == "onmt":
        cmd = boot + ["onmt.bin.train", "-config", str(cfg), *args.onmt_arg]
    else:
        cmd = boot + ["joeynmt", "train", str(cfg), "--skip-test"]
    end_step = args.warmup + args.steps
    parse = PARSERS[system]
    records, harness_t = [], {}
    log_path = run_dir / "stdout.log"
    load_before = os.getloadavg()
    t0 = time.monotonic()
    with open(log_path, "w", encoding="utf-8") as log:
        proc = subprocess.Popen(
            cmd,
            cwd=run_dir,
            env=_env(args.threads),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            bufsize=1,
            start_new_session=True,
        )
        timer = threading.Timer(args.timeout, _kill_group, [proc])
        timer.start()
        try:
            for line in proc.stdout:
                log.write(line)
                rec = parse(line)
                if rec is None:
                    continue
                records.append(rec)
                harness_t.setdefault(rec["step"], time.monotonic())
                if rec["step"] >= end_step:
                    break
        finally:
            timer.cancel()
            _kill_group(proc)
            rest = proc.stdout.read() if proc.stdout else ""
            log.write(rest)
    if not records or records[-1]["step"] < end_step:
        raise RuntimeError(
            f"{system}: training ended before step {end_step} "
            f"(exit {proc.returncode}); see {log_path}"
        )
    res = window_throughput(records, args.warmup, args.steps)
    res["harness_window_s"] = harness_t[end_step] - harness_t[args.warmup]
    res["run_s"] = time.monotonic() - t0
    res["loadavg_1min_before_after"] = [load_before[0], os.getloadavg()[0]]
    res["log"] = str(log_path.relative_to(args.out))
    return res


def run_ours(args, run_dir: Path) -> dict:
    run_dir.mkdir(parents=True, exist_ok=True)
    cmd = [
        str(args.ours_python),
        "-m",
        "scripts.benchmarks.ours_window",
        "--steps",
        str(args.steps),
        "--warmup",
        str(args.warmup),
        *args.ours_arg,
    ]
    log_path = run_dir / "stdout.log"
    load_before = os.getloadavg()
    t0 = time.monotonic()
    with open(log_path, "w", encoding="utf-8") as log:
        proc = subprocess.run(
            cmd,
            cwd=REPO,
            env=_env(args.threads),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=args.timeout,
        )
        log.write(proc.stdout)
    if proc.returncode != 0:
        raise RuntimeError(f"ours: exit {proc.returncode}; see {log_path}")
    last = None
    for line in proc.stdout.splitlines():
        line = line.strip()
        if line.startswith("{") and line.endswith("}"):
            try:
                last = json.loads(line)
            except json.JSONDecodeError:
                pass
    if not last or "tgt_tok_per_s" not in last:
        raise RuntimeError(f"ours: no JSON line with tgt_tok_per_s; see {log_path}")
    if last.get("steps") not in (None, args.steps):
        raise RuntimeError(f"ours: measured {last.get('steps')} steps, expected {args.steps}")
    res = dict(last)
    res["tgt_tok_per_s"] = float(last["tgt_tok_per_s"])
    res["run_s"] = time.monotonic() - t0
    res["loadavg_1min_before_after"] = [load_before[0], os.getloadavg()[0]]
    res["log"] = str(log_path.relative_to(args.out))
    return res


def _version(py: Path, dists) -> dict:
    code = (
        "import importlib.metadata as m, json, sys; d = {}\n"
        "for n in sys.argv[1:]:\n"
        "    try: d[n] = m.version(n)\n"
        "    except Exception: d[n] = None\n"
        "print(json.dumps(d))"
    )
    try:
        out = subprocess.run(
            [str(py), "-c", code, *dists], capture_output=True, text=True, timeout=60
        )
        return json.loads(out.stdout.strip().splitlines()[-1])
    except Exception:  # noqa: BLE001 - informational only
        return {}


# --------------------------------------------------------------------- summary
def write_summary(args, runs, versions) -> dict:
    med = {}
    for s in args.systems:
        vals = [r["tgt_tok_per_s"] for r in runs if r["system"] == s and "tgt_tok_per_s" in r]
        if vals:
            med[s] = statistics.median(vals)
    ratios = {}
    for peer in ("onmt", "joey"):
        if "ours" in med and peer in med:
            ratios[f"ours/{peer}"] = med["ours"] / med[peer]
    summary = {
        "benchmark": "m30k_small training throughput",
        "unit": "non-pad target tokens per second (words + </s>, no <s>)",
        "protocol": {
            "warmup_steps": args.warmup,
            "window_steps": args.steps,
            "rounds": args.rounds,
            "order": list(args.systems),
            "threads": args.threads,
            "batch": "64 sentences",
        },
        "host": {
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
        },
        "versions": versions,
        "median_tgt_tok_per_s": med,
        "ratios": ratios,
        "runs": runs,
    }
    (args.out / "peer_throughput.json").write_text(json.dumps(summary, indent=2) + "\n")

    lines = [
        "# m30k_small training throughput (non-pad target tokens/s)",
        "",
        f"Median of {args.rounds} alternating windows of {args.steps} steps after "
        f"{args.warmup} warm-up steps; batch 64 sentences; {args.threads} threads.",
        "",
        "| system | " + " | ".join(f"round {i + 1}" for i in range(args.rounds)) + " | median |",
        "|---|" + "---|" * (args.rounds + 1),
    ]
    for s in args.systems:
        cells = []
        for i in range(args.rounds):
            r = next((r for r in runs if r["system"] == s and r["round"] == i + 1), None)
            cells.append(
                f"{r['tgt_tok_per_s']:.0f}"
                if r and "tgt_tok_per_s" in r
                else ("failed" if r else "-")
            )
        m = f"{med[s]:.0f}" if s in med else "-"
        lines.append(f"| {s} | " + " | ".join(cells) + f" | {m} |")
    if ratios:
        lines += ["", "| ratio | value |", "|---|---|"]
        lines += [f"| {k} | {v:.3f} |" for k, v in ratios.items()]
    lines += [
        "",
        "Versions: "
        + ", ".join(
            f"{s}: " + ", ".join(f"{k} {v}" for k, v in d.items()) for s, d in versions.items()
        ),
    ]
    (args.out / "peer_throughput.md").write_text("\n".join(lines) + "\n")
    return summary


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True, help="results folder")
    ap.add_argument(
        "--systems",
        default=",".join(SYSTEMS),
        help="comma-separated subset of onmt,joey,ours (run in this order)",
    )
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=200, help="steps in the measured window")
    ap.add_argument("--warmup", type=int, default=20, help="steps before the window")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument(
        "--peers-dir", type=Path, default=Path(os.environ.get("PEERS_DIR", REPO / ".peers"))
    )
    ap.add_argument("--ours-python", type=Path, default=REPO / ".venv" / "bin" / "python")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds per run")
    ap.add_argument(
        "--onmt-arg",
        action="append",
        default=[],
        help="extra onmt_train argument(s), e.g. --onmt-arg=-bucket_size --onmt-arg=64",
    )
    ap.add_argument(
        "--ours-arg",
        action="append",
        default=[],
        help="extra argument(s) for scripts/benchmarks/ours_window.py (e.g. a config override)",
    )
    args = ap.parse_args(argv)
    args.systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    bad = [s for s in args.systems if s not in SYSTEMS]
    if bad:
        ap.error(f"unknown system(s): {bad}")
    args.peers_dir = args.peers_dir.resolve()
    args.out = args.out.resolve()
    args.out.mkdir(parents=True, exist_ok=True)

    versions = {}
    for s in args.systems:
        if s == "ours":
            versions[s] = _version(args.ours_python, ["torch", "luong_lit"])
        else:
            py = args.peers_dir / f"{s}-venv" / "bin" / "python"
            if not py.exists():
                sys.exit(f"{py} missing: run scripts/peers/setup.sh (PEERS_DIR)")
            versions[s] = _version(py, ["torch", "OpenNMT-py" if s == "onmt" else "joeynmt"])
            check_window(
                s,
                (PEER_CFG_DIR / f"{s}_m30k_small.yaml").read_text(encoding="utf-8"),
                args.warmup,
                args.steps,
            )

    runs = []
    for rnd in range(1, args.rounds + 1):
        for s in args.systems:
            run_dir = args.out / "runs" / f"r{rnd}_{s}"
            print(f"[round {rnd}] {s} ...", flush=True)
            try:
                res = run_ours(args, run_dir) if s == "ours" else run_peer(s, args, run_dir)
                print(f"[round {rnd}] {s}: {res['tgt_tok_per_s']:.1f} tgt tok/s", flush=True)
            except Exception as e:  # noqa: BLE001 - keep going, record failure
                res = {"error": str(e)}
                print(f"[round {rnd}] {s}: FAILED: {e}", flush=True)
            runs.append({"system": s, "round": rnd, **res})

    summary = write_summary(args, runs, versions)
    print("\nmedian non-pad target tokens/s:")
    for s, v in summary["median_tgt_tok_per_s"].items():
        print(f"  {s:5s} {v:10.1f}")
    for k, v in summary["ratios"].items():
        print(f"  {k}: {v:.3f}")
    print(f"written: {args.out / 'peer_throughput.json'}, {args.out / 'peer_throughput.md'}")
    return 1 if any("error" in r for r in runs) else 0


if __name__ == "__main__":
    sys.exit(main())
