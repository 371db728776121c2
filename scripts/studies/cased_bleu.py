"""BLEU as the field reports it, from a kept run's outputs: cased, detokenised sacreBLEU (13a)
with its signature, beside the kit's tokenised BLEU on lowercased text.

    python -m scripts.studies.cased_bleu RUN [RUN ...] [--test test_2016_flickr] [--unk]

``RUN`` is a run folder as ``results/ladders/`` keeps it (``.hydra/config.yaml`` and
``eval_TEST.hyp`` beside ``eval_TEST.ref``; no checkpoint needed). Its tokenised, lowercased
output lines are made natural text as ``translate`` makes them (the training data's recipe
undone, recased by the recaser learned from the cased training text, with the raw source's
casing for words the recaser does not know: :class:`~luong_lit.data.text.model_text.RecipeText`)
and scored against the raw references of the mirror's cased release (``multi30k/raw``); an
``<unk>`` left in the output counts as one wrong word, as in ``evaluate``. ``--unk``: the lines
after unknown-word replacement (``eval_TEST.hyp_unk``). One line per run: tokenised BLEU (the
tables'), cased 13a, lowercased 13a and the cased signature.
"""

from __future__ import annotations

import argparse
import gzip
import sys
from pathlib import Path

import sacrebleu
from omegaconf import OmegaConf

from luong_lit.data.sources.fetch import local_mirror
from luong_lit.data.sources.named import cased_target_file
from luong_lit.data.text.model_text import RecipeText
from luong_lit.data.text.preprocess import recipe_for
from luong_lit.data.text.user_text import learn_recaser
from luong_lit.data.vocab import UNK
from luong_lit.errors import DataError
from luong_lit.metrics.bleu import UNK_DETOK, corpus_bleu_tok
from luong_lit.reports import Evaluation


def read(path: Path) -> list[str]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as fh:
        return fh.read().splitlines()


def text_of(data: dict, mirror: Path) -> RecipeText:
    """How ``translate`` makes the output of a model trained on ``data`` (the run's data
    config) natural: its recipe and the recaser learned from the cased training text."""
    data = {**data, "mirror": str(mirror)}
    recipe = recipe_for(data)
    cased = cased_target_file(data)
    recaser = learn_recaser(cased, recipe, data["tgt_lang"]) if cased is not None else None
    return RecipeText(recipe, data["src_lang"], data["tgt_lang"], recaser)


def natural(run: Path, test: str, kind: str, mirror: Path) -> tuple[list[str], list[str]]:
    """The run's ``kind`` output lines on ``test`` as natural text, and the raw references."""
    data = OmegaConf.to_container(OmegaConf.load(run / ".hydra" / "config.yaml").data)
    assert isinstance(data, dict)
    text, raw = text_of(data, mirror), mirror / "multi30k" / "raw"
    sources = read(raw / f"{test}.{data['src_lang']}.gz")
    refs = read(raw / f"{test}.{data['tgt_lang']}.gz")
    hyps = read(run / f"eval_{test}.{kind}")
    words = [[UNK_DETOK if w == UNK else w for w in h.split()] for h in hyps]  # as evaluate
    lines = [text.render(w, text.source(s)) for w, s in zip(words, sources, strict=True)]
    return lines, refs


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("runs", nargs="+", type=Path)
    ap.add_argument("--test", default="test_2016_flickr")
    ap.add_argument("--unk", action="store_true", help="the lines after unknown-word replacement")
    args = ap.parse_args(argv)
    mirror = local_mirror("scripts.studies.cased_bleu")
    kind = "hyp_unk" if args.unk else "hyp"
    for run in args.runs:
        hyps, refs = natural(run, args.test, kind, mirror)
        kept = Evaluation.read(run / f"eval_{args.test}.json").lines(kind)
        if kept is None:
            raise DataError(f"{run}: its evaluate record keeps no {kind} lines")
        tok = corpus_bleu_tok(*kept)  # the lines BLEU read, wherever the record keeps them
        cased = sacrebleu.metrics.BLEU(tokenize="13a")
        lower = sacrebleu.metrics.BLEU(tokenize="13a", lowercase=True)
        print(f"{run}: tokenised {tok:.2f} | cased 13a {cased.corpus_score(hyps, [refs]).score:.2f}"
              f" | lowercased 13a {lower.corpus_score(hyps, [refs]).score:.2f}"
              f" | {cased.get_signature()}")  # fmt: skip


if __name__ == "__main__":
    from luong_lit.cli import run_command  # a missing mirror or bad input: one line, exit 2

    sys.exit(run_command(main))
