"""Two systems' test outputs compared by the paired bootstrap, run folder against run folder.

    python -m scripts.studies.paired BASELINE SYSTEM [BASELINE SYSTEM ...] [--unk | --system-unk]

Each argument is a run folder (its own ``evaluate`` report's kept lines: ``eval_TEST.hyp``,
``eval_TEST.hyp_unk`` with ``--unk``, and ``eval_TEST.ref``) or one ``eval_*.json`` report.
``--system-unk`` reads the baseline's lines before replacement and the system's after it: the
gain of one way of replacing unknown words (e.g. a dictionary) on the same model. Each
pair gets a line: the two BLEUs, the gain with its 95 % interval, the two-sided p and the
verdict (``luong_lit.metrics.significance``, as ``report`` judges a ladder's step); each such
test is over the test sentences only, of these two models. With several pairs (one a seed) a
last line tests the baselines' seeds against the systems' by the two-level bootstrap over seeds
and sentences (the test ``report`` gives a ladder's step); the pairs' outputs are not pooled as
if they were more sentences, which would leave seed variance untested.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from luong_lit.analysis.outputs import report_outputs, run_outputs
from luong_lit.metrics.significance import Paired, SeedPaired, paired_bootstrap, two_level_bootstrap
from luong_lit.metrics.significance_stats import mc_error
from luong_lit.metrics.verdicts import verdict


def outputs(path: Path, kind: str) -> tuple[list[str], list[str]]:
    """The output lines of ``kind`` and the references behind a run folder or a report."""
    found = report_outputs(path, kind) if path.is_file() else run_outputs(path, kind)
    if found is None:
        raise SystemExit(
            f"paired: {path} has no kept {kind} outputs beside an evaluate report "
            f"(run `python -m luong_lit evaluate CKPT --out {path}` first)"
        )
    return found


#: draws of each test: p's Monte Carlo error (printed) about 0.002 at p = 0.05
SAMPLES = 10_000


def p_text(p: float, samples: int = SAMPLES) -> str:
    """``p 0.011 ± 0.0010``: (k+1)/(B+1) and its Monte Carlo error (``p 0.0001`` where no draw
    of the 10,000 reached the gain: the least p they resolve)."""
    return f"p {p:.4f}" if p < 0.001 else f"p {p:.3f} ± {mc_error(p, samples):.4f}"


def line(label: str, found: Paired | SeedPaired) -> str:
    """One test: BLEUs (means over seeds), gain, its 95 % interval, the two-sided p, verdict."""
    a, b = ((found.baseline.bleu, found.system.bleu) if isinstance(found, SeedPaired)
            else (found.baseline, found.system))  # fmt: skip
    return (f"{label}: {a:.2f} -> {b:.2f}  gain {found.gain:+.2f} "
            f"[{found.low:+.2f}, {found.high:+.2f}]  {p_text(found.p)} (two-sided)  "
            f"{verdict(found)}  ({found.sentences} sentences)")  # fmt: skip


def labels(a: Path, b: Path) -> tuple[str, str]:
    """The two paths' parts after the folders they share (``paper/table1_dropout/seed1234``)."""
    shared = 0
    for x, y in zip(a.parts, b.parts, strict=False):
        if x != y:
            break
        shared += 1
    shared = min(shared, len(a.parts) - 1, len(b.parts) - 1)
    return "/".join(a.parts[shared:]), "/".join(b.parts[shared:])


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs="+", type=Path, help="BASELINE SYSTEM pairs")
    which = ap.add_mutually_exclusive_group()
    which.add_argument(
        "--unk", action="store_true", help="the outputs after unknown-word replacement"
    )
    which.add_argument(
        "--system-unk",
        action="store_true",
        help="the baseline's before replacement, the system's after",
    )
    args = ap.parse_args(argv)
    if len(args.runs) % 2:
        ap.error(f"runs come in BASELINE SYSTEM pairs; {len(args.runs)} given")
    kinds = ("hyp_unk", "hyp_unk") if args.unk else ("hyp", "hyp_unk" if args.system_unk else "hyp")
    pairs = []
    for base, system in zip(args.runs[::2], args.runs[1::2], strict=True):
        (hyp_a, ref_a), (hyp_b, ref_b) = outputs(base, kinds[0]), outputs(system, kinds[1])
        if ref_a != ref_b:
            raise SystemExit(f"paired: {base} and {system} were evaluated on different references")
        pairs.append((hyp_a, hyp_b, ref_a))
        label = " -> ".join(labels(base, system))
        print(line(label, paired_bootstrap(hyp_a, hyp_b, ref_a, SAMPLES)))
    if len(pairs) > 1:
        if any(refs != pairs[0][2] for _, _, refs in pairs):
            raise SystemExit("paired: the pairs were evaluated on different references: "
                             "no test over their seeds")  # fmt: skip
        found = two_level_bootstrap(
            [a for a, _, _ in pairs], [b for _, b, _ in pairs], pairs[0][2], SAMPLES
        )
        print(line(f"over the {len(pairs)} pairs' seeds and sentences (two-level)", found))


if __name__ == "__main__":
    main(sys.argv[1:])
