"""A Markdown table of runs beside the paper's numbers for the same row of Tables 1, 3, 4 and 6.

    python -m luong_lit.report RUN_DIR [RUN_DIR ...] [--out report.md]

Each run directory is one ``python -m luong_lit.train`` run. The report reads its config
(``.hydra/``), ``results.json`` (test ppl and greedy BLEU), any ``eval_*.json`` written by
``luong_lit.evaluate`` (beam BLEU before and after unk replacement) and any ``align.json``
written by ``luong_lit.align`` (AER).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Sequence

from luong_lit.nn.seq2seq import ATTENTIONS, SCORES
from luong_lit.paper_numbers import paper_row

ATTENTION_NAMES = {cls.__name__: name for name, cls in ATTENTIONS.items() if cls is not None}
SCORE_NAMES = {cls.__name__: name for name, cls in SCORES.items()}


def _name(node, names: dict) -> str | None:
    if not node:
        return None
    return names.get(str(node.get("_target_", "")).rsplit(".", 1)[-1])


def describe(run_dir: Path) -> dict:
    """Experiment name, attention, score and input feeding of a run, from its saved config."""
    from omegaconf import OmegaConf

    cfg_path = run_dir / ".hydra" / "config.yaml"
    if not cfg_path.is_file():
        raise FileNotFoundError(f"{run_dir}: not a luong_lit run directory (no .hydra/config.yaml)")
    cfg = OmegaConf.to_container(OmegaConf.load(cfg_path), resolve=False)
    net = cfg["model"]["net"]
    overrides = OmegaConf.load(run_dir / ".hydra" / "overrides.yaml") if (run_dir / ".hydra" / "overrides.yaml").is_file() else []
    experiment = next((o.split("=", 1)[1] for o in overrides if o.startswith("experiment=")), "m30k_small")
    attention = _name(net.get("attention"), ATTENTION_NAMES) or "none"
    return {"run": run_dir.name, "experiment": experiment, "attention": attention,
            "score": _name(net.get("score"), SCORE_NAMES) if attention != "none" else None,
            "feed_input": cfg.get("feed_input")}


def collect(run_dir: Path) -> dict:
    row = describe(run_dir)
    results = json.loads((run_dir / "results.json").read_text()) if (run_dir / "results.json").is_file() else {}
    tests = {k: v for k, v in results.items() if isinstance(v, dict)}
    if tests:
        name, first = next(iter(tests.items()))
        row.update(test=name, ppl=first.get("ppl"), bleu_greedy=first.get("bleu_greedy"))
    for path in sorted(run_dir.glob("eval_*.json")):
        ev = json.loads(path.read_text())
        row.update(beam=ev["decoding"]["beam"], bleu_beam=ev["bleu"]["bleu_tok"],
                   bleu_beam_unk=ev["bleu_unk_replaced"]["bleu_tok"])
    if (run_dir / "align.json").is_file():
        row["aer"] = json.loads((run_dir / "align.json").read_text()).get("aer")
    row["paper"] = paper_row(row["experiment"], row["attention"], row["score"])
    return row


def _f(x, fmt="{:.2f}") -> str:
    return "–" if x is None else fmt.format(x)


def markdown(rows: Sequence[dict]) -> str:
    lines = ["| run | attention | score | feed | test ppl | greedy BLEU | beam BLEU | + unk | AER "
             "| paper row | paper ppl | paper BLEU | paper + unk | paper AER |",
             "|---|---|---|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|"]
    for r in rows:
        p = r["paper"]
        lines.append(
            f"| {r['run']} | {r['attention']} | {r['score'] or '–'} | {r['feed_input']} | {_f(r.get('ppl'))} "
            f"| {_f(r.get('bleu_greedy'))} | {_f(r.get('bleu_beam'))} | {_f(r.get('bleu_beam_unk'))} "
            f"| {_f(r.get('aer'), '{:.3f}')} | {('Table ' + p['table'] + ': ' + p['row']) if p else '–'} "
            f"| {_f(p.get('ppl'), '{:.1f}')} | {_f(p.get('bleu'), '{:.1f}')} | {_f(p.get('bleu_unk'), '{:.1f}')} "
            f"| {_f(p.get('aer'))} |")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m luong_lit.report", description=__doc__.split("\n")[0])
    ap.add_argument("runs", nargs="+", help="run directories")
    ap.add_argument("--out", help="write the Markdown here as well")
    args = ap.parse_args(argv)
    try:
        rows = [collect(Path(r)) for r in args.runs]
    except (FileNotFoundError, KeyError, json.JSONDecodeError) as err:
        print(f"error: {err}", file=sys.stderr)
        sys.exit(2)
    text = markdown(rows)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
    sys.stdout.write(text)


if __name__ == "__main__":
    main()
