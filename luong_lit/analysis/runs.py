"""What a run directory holds, read back: its configuration and its measured figures.

A run directory is one ``python -m luong_lit train`` run: its config (``.hydra/``),
``results.json`` (what ``trainer.test`` measured), any ``eval_*.json`` written by ``evaluate``
(beam BLEU before and after unk replacement; an ensemble's ``eval_*_ensemble.json`` is not the
run's own) and any ``align.json`` written by ``align`` (AER). chrF and TER (tokenised, as the
BLEU beside them) are read where the run's files have them; older files without them leave
them blank. A run of a ladder (``ladder=`` in
its overrides: a row of the paper's Table 1 or Table 3) is given that row of the paper.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from luong_lit.analysis.records import RunFacts, RunRow, evaluation_measures, results_measures
from luong_lit.data.sources.named import corpus_name
from luong_lit.nn.names import attention_name, score_name
from luong_lit.paper.numbers import like_with_like, paper_row
from luong_lit.reports import Evaluation, Results

if TYPE_CHECKING:
    from omegaconf import DictConfig, ListConfig


def corpus_label(dataset: str | None, src: str | None, tgt: str | None, test: str | None) -> str:
    """Where a run was measured, in words: ``Multi30k En→De (test_2016_flickr)``."""
    name = corpus_name(dataset)
    if src and tgt and (src, tgt) != ("src", "tgt"):  # data=files leaves them unnamed
        name += f" {src.capitalize()}→{tgt.capitalize()}"
    return f"{name} ({test})" if test else name


def override_value(overrides, key: str) -> str | None:
    """The value ``key`` is given on the run's command line (``key=``, ``+key=``), or None."""
    found = [str(o).split("=", 1) for o in overrides if "=" in str(o)]
    return next((v for k, v in found if k.lstrip("+~") == key), None)


#: Overrides that change how a run is carried out, shown and kept, never the weights it trains,
#: when it stops, the checkpoint it picks or a figure it reports: runs differing only in these
#: (and the seed) are seeds of one recipe. Every other key is a part of the recipe, the
#: callbacks' among them (``callbacks.ema.decay``, ``callbacks.early_stopping.patience``, the BLEU
#: callbacks' beam and batches). ``tests/test_run_only.py`` trains a tiny run with each changed
#: and finds the same weights, bit for bit.
RUN_ONLY = (
    "callbacks.progress", "callbacks.throughput", "callbacks.checkpoint", "callbacks.signals",
    "callbacks.resumed_logs", "callbacks.attention_heatmaps", "callbacks.epoch_checkpoints",
    "callbacks.model_checkpoint.save_last",
    "callbacks.model_checkpoint.dirpath", "callbacks.greedy_bleu.samples",
    "callbacks.beam_bleu.on_test", "trainer.enable_progress_bar", "trainer.log_every_n_steps",
    "logger", "data.num_workers", "test_after_training", "hydra", "ckpt_path", "overwrite",
    "ddp_timeout_s", "checkpoint_writes",
)  # fmt: skip
#: overrides that change only the order of a computation's floating-point sums (the CPU
#: threads), not what it computes: seeds of one recipe, as the device is (below)
ARITHMETIC = ("threads",)
#: overrides that choose the one device a run trains on, not what it trains: runs on a CPU and
#: on a GPU are seeds of one recipe. Its precision (``trainer.precision``) is a part of the
#: recipe, and so are several devices (``trainer=ddp_4gpu``, ``trainer.devices=4``), which
#: multiply the batch.
HARDWARE = ("trainer=cpu", "trainer=gpu", "trainer.devices=1")
HARDWARE_KEYS = ("trainer.accelerator",)
NAMED = ("seed", "experiment", "ladder", "ablation")  # reported in their own columns


def override_key(override) -> str:
    """The key of a command-line override: ``k`` of ``k=v``, ``+k=v``, ``++k=v`` or ``~k``."""
    return str(override).split("=", 1)[0].lstrip("+~")


def _run_only(key: str) -> bool:
    """Whether ``key`` is one of :data:`RUN_ONLY`, or inside one (``callbacks.progress.x``)."""
    return any(key == k or key.startswith(f"{k}.") or key.startswith(f"{k}/") for k in RUN_ONLY)


def model_overrides(overrides, leave_out: Sequence[str] = ()) -> list[str]:
    """The overrides that change the model a run trains: without the :data:`RUN_ONLY` ones and
    those whose key is in ``leave_out``."""
    return [
        str(o)
        for o in overrides
        if (key := override_key(o)) not in (*leave_out, *HARDWARE_KEYS, *ARITHMETIC)
        and not _run_only(key)
        and str(o).lstrip("+~") not in HARDWARE
    ]


def recipe_changes(overrides) -> str:
    """The run's overrides that change its recipe beyond its experiment and ladder row (e.g.
    ``model.net.init_state=copy``), sorted and space-separated; "" for none."""
    return " ".join(sorted(o.lstrip("+~") for o in model_overrides(overrides, NAMED)))


def is_run(path: Path) -> bool:
    """Whether ``path`` is a run directory (it holds ``.hydra/config.yaml``)."""
    return (Path(path) / ".hydra" / "config.yaml").is_file()


def describe(run_dir: Path) -> RunFacts:
    """Experiment or ladder name, attention, score, input feeding and corpus of a run, from its
    saved config."""
    from omegaconf import OmegaConf

    cfg_path = run_dir / ".hydra" / "config.yaml"
    if not cfg_path.is_file():
        raise FileNotFoundError(f"{run_dir}: not a luong_lit run directory (no .hydra/config.yaml)")
    # a run's saved config is a mapping (Hydra writes the composed DictConfig)
    cfg = cast(dict[str, Any], OmegaConf.to_container(OmegaConf.load(cfg_path), resolve=False))
    net, data = cfg["model"]["net"], cfg.get("data") or {}
    overrides_path = run_dir / ".hydra" / "overrides.yaml"
    overrides: DictConfig | ListConfig | list[str] = (
        OmegaConf.load(overrides_path) if overrides_path.is_file() else []
    )
    attention = attention_name(net.get("attention"))
    tests = data.get("test")
    return RunFacts(
        run=run_dir.name,
        experiment=override_value(overrides, "experiment") or "m30k_small",
        ladder=override_value(overrides, "ladder"),
        changes=recipe_changes(overrides),
        attention=attention,
        score=score_name(net.get("score")) if attention != "none" else None,
        feed_input=cfg.get("feed_input"),
        seed=cfg.get("seed"),
        accelerator=(cfg.get("trainer") or {}).get("accelerator"),
        dataset=data.get("dataset"),
        corpus=corpus_label(
            data.get("dataset"),
            data.get("src_lang"),
            data.get("tgt_lang"),
            next(iter(tests), None) if isinstance(tests, dict) else None,
        ),
    )


def own_evals(run_dir: Path) -> list[Path]:
    """The run's own ``eval_*.json`` reports (not an ensemble's written into its folder)."""
    return [p for p in sorted(run_dir.glob("eval_*.json")) if not p.stem.endswith("_ensemble")]


def collect(run_dir: Path) -> RunRow:
    """:func:`describe`, the run's measured figures (:mod:`~luong_lit.analysis.records`), the
    paper's row for the same system, its cell (:func:`cell_of`) and path."""
    facts = describe(run_dir)
    results_path = run_dir / "results.json"
    results = Results.read(results_path) if results_path.is_file() else Results()
    test, found = results_measures(results)
    for path in own_evals(run_dir):
        found.update(evaluation_measures(Evaluation.read(path)))
    if (run_dir / "align.json").is_file():
        found["aer"] = json.loads((run_dir / "align.json").read_text()).get("aer")
    paper = paper_row(facts.ladder or facts.experiment, facts.attention, facts.score)
    return RunRow(
        **{f.name: getattr(facts, f.name) for f in fields(facts)}, **found, test=test,
        paper=like_with_like(paper, facts.dataset), cell=cell_of(run_dir), path=str(run_dir),
    )  # fmt: skip


def cell_of(run_dir: Path) -> str:
    """The run's command-line overrides without its seed and those that do not change what it
    trains or reports (:data:`RUN_ONLY`: progress bars, checkpoints, ``ckpt_path``; the threads
    and the device): what the runs of a cell share."""
    from omegaconf import OmegaConf

    path = run_dir / ".hydra" / "overrides.yaml"
    overrides: DictConfig | ListConfig | list[str] = OmegaConf.load(path) if path.is_file() else []
    return " ".join(sorted(model_overrides(overrides, ("seed",)))) or "(defaults)"


def run_label(run: Path) -> str:
    """``attention (score)``, or ``none``."""
    return describe(run).label


def _f(x, fmt="{:.2f}") -> str:
    return "–" if x is None else fmt.format(x)


#: the chrF and TER columns beside BLEU's: (row key, heading)
OTHER_COLUMNS = tuple(
    (f"{m}_{d}", f"{head} {name}")
    for m, name in (("chrf", "chrF"), ("ter", "TER"))
    for d, head in (("greedy", "greedy"), ("beam", "beam"), ("beam_unk", "+ unk"))
)


def markdown(rows: Sequence[RunRow]) -> str:
    """One line per run, beside the paper's row for the same system (chrF and TER after BLEU;
    TER: lower is better)."""
    others = " | ".join(head for _, head in OTHER_COLUMNS)
    lines = [
        f"| run | attention | score | feed | test ppl | greedy BLEU | beam BLEU | + unk | {others} "
        "| AER | paper row | paper ppl | paper BLEU | paper + unk | paper AER |",
        "|---|---|---|---|" + "---:|" * (5 + len(OTHER_COLUMNS)) + "---|" + "---:|" * 4,
    ]
    for r in rows:
        p = r.paper or {}
        cells = [r.run, r.attention, r.score or "–", str(r.feed_input)]
        cells += [_f(r.measure(k)) for k in ("ppl", "bleu_greedy", "bleu_beam", "bleu_beam_unk")]
        cells += [_f(r.measure(k)) for k, _ in OTHER_COLUMNS]
        cells += [_f(r.aer, "{:.3f}"), f"Table {p['table']}: {p['row']}" if p else "–"]
        cells += [
            _f(p.get("ppl"), "{:.1f}"),
            _f(p.get("bleu"), "{:.1f}"),
            _f(p.get("bleu_unk"), "{:.1f}"),
        ]
        lines.append("| " + " | ".join([*cells, _f(p.get("aer"))]) + " |")
    return "\n".join(lines) + "\n"
