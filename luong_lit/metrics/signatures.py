"""The sacreBLEU metrics behind the kit's scores, and sacreBLEU's signature of each.

A signature (``nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no|version:2.6.0``) says how a score
was computed: what ``python -m sacrebleu`` prints beside the same score, so a number can be
compared with another toolkit's. The kit's scores and their metrics:

* ``bleu_tok``: tokenised BLEU (sacreBLEU ``tokenize='none'``, :mod:`luong_lit.metrics.bleu`);
* ``bleu_detok``: detokenised BLEU (sacreBLEU ``13a``);
* ``chrf``, ``chrfpp`` and ``ter``: sacreBLEU's ``CHRF()``, ``CHRF(word_order=2)`` (chrF++) and
  ``TER()`` with their default settings (:mod:`luong_lit.metrics.chrf_ter`).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

#: a score's name -> what sacreBLEU prints before its signature
LABELS = {
    "bleu_tok": "BLEU",
    "bleu_detok": "BLEU",
    "chrf": "chrF2",
    "chrfpp": "chrF2++",
    "ter": "TER",
}


def sacrebleu_metric(name: str):
    """A new sacreBLEU metric object for the score ``name`` (a key of :data:`LABELS`)."""
    from sacrebleu.metrics import BLEU, CHRF, TER

    made: dict[str, Callable[[], Any]] = {
        "bleu_tok": lambda: BLEU(tokenize="none", force=True),
        "bleu_detok": lambda: BLEU(tokenize="13a"),
        "chrf": CHRF,
        "chrfpp": lambda: CHRF(word_order=2),
        "ter": TER,
    }
    if name not in made:
        raise ValueError(f"no sacreBLEU metric named {name!r}: one of {', '.join(made)}")
    return made[name]()


@cache
def signature(name: str) -> str:
    """sacreBLEU's signature of the score ``name`` against one reference a sentence, as
    ``python -m sacrebleu`` prints it (the number of references is known once a metric has read
    some, hence the one-line corpus scored here)."""
    metric = sacrebleu_metric(name)
    metric.corpus_score(["a"], [["a"]])
    return str(metric.get_signature())


def signatures(names) -> dict[str, str]:
    """``{name: signature}`` for each score of ``names``."""
    return {name: signature(name) for name in names}


def labelled(name: str) -> str:
    """The signature as sacreBLEU prints it beside a score: ``chrF2|nrefs:1|...|version:2.6.0``."""
    return f"{LABELS[name]}|{signature(name)}"


#: the first word of a logged figure's name -> the score it is (``bleu_greedy``: tokenised BLEU)
FIGURES = {"bleu": "bleu_tok", "chrf": "chrf", "chrfpp": "chrfpp", "ter": "ter"}


def figure_signatures(figures) -> dict[str, str]:
    """``{"bleu": ..., "chrf": ...}``: the signature of each score that ``figures`` (logged
    names such as ``test/<name>/chrf_greedy`` or ``ter_beam_unk``) hold, by the figures' first
    word, as ``results.json`` keeps them beside its figures (``bleu_signature``, ...)."""
    found = {str(f).rsplit("/", 1)[-1].split("_", 1)[0] for f in figures}
    return {word: signature(FIGURES[word]) for word in FIGURES if word in found}


def score_signatures(keys) -> dict[str, str]:
    """sacreBLEU's signature of each of ``evaluate``'s scores (``bleu_tok``, ``bleu_detok``,
    ``chrf_tok``, ``ter_detok``, ...: the metric, then the text it read)."""
    return {k: signature(k if k.startswith("bleu_") else k.rsplit("_", 1)[0]) for k in keys}
