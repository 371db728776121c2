"""What a checkpoint keeps so that ``translate`` reads raw text and writes natural text: the
corpus's preprocessing recipe and, for a lowercased corpus with a cased release, a recaser
learned from the cased target side of the training data (cached by the file's checksum)."""

from __future__ import annotations

import gzip
import hashlib
import json
import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from luong_lit.data.text.preprocess import Preprocessing, recipe_for
from luong_lit.data.text.recase import Recaser
from luong_lit.resources import cache_dir

log = logging.getLogger(__name__)


def _read(path: Path) -> list[str]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as fh:
        return fh.read().splitlines()


def learn_recaser(path: Path, recipe: Preprocessing, lang: str) -> Recaser:
    """A recaser from ``path`` tokenised as ``recipe`` does, without lowercasing (cached)."""
    digest = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    cased = recipe.cased()
    key = hashlib.sha256(f"{digest}{cased.to_dict()}{lang}".encode()).hexdigest()[:16]
    cache = cache_dir() / "recasers" / f"{key}.json"
    if cache.is_file():
        return Recaser(json.loads(cache.read_text(encoding="utf-8")))
    log.info("learning the recaser from %s", path)
    recaser = Recaser.learn(cased.apply(line, lang) for line in _read(path))
    cache.parent.mkdir(parents=True, exist_ok=True)
    # each process its own temporary file (the ranks of a data-parallel run learn it at once),
    # renamed into place whole: a reader sees one finished recaser or none
    tmp = cache.with_name(f"{cache.stem}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(recaser.forms, ensure_ascii=False), encoding="utf-8")
    tmp.replace(cache)
    return recaser


def user_text(data: Mapping, cased_file: Path | None) -> dict[str, Any]:
    """``{"preprocess": recipe, "recaser": forms}`` for the checkpoint: the recaser is learned
    from ``cased_file``, the cased target side of the training text
    (:func:`~luong_lit.data.sources.registry.cased_target_file`), where the corpus is lowercased."""
    if data.get("tokenizer", "none") != "none":  # the kit tokenises: the tokeniser says it all
        return {}
    recipe = recipe_for(data)
    out: dict[str, Any] = {"preprocess": recipe.to_dict()}
    if recipe.lowercase and cased_file is not None:
        out["recaser"] = learn_recaser(cased_file, recipe, data["tgt_lang"]).forms
    return out
