"""Gold-aligned text read in a model's direction and tokens: the RWTH De–En set (paper §5.4,
Table 6), or files of one's own.

The gold text is already tokenised, and each gold token is one model token, lowercased and
escaped as the model's training text was where its vocabulary has that form (a lowercased
Multi30k model reads "Haus" as "haus", "'s" as "&apos;s"). Tokens outside the model's vocabulary
are read as ``<unk>`` but keep their position, so every gold link stays scorable.
"""

from __future__ import annotations

from pathlib import Path

from luong_lit.data.io import DataError


def rwth_files(root: Path | None, src_lang: str, tgt_lang: str) -> tuple[Path, Path, Path, bool]:
    """(source text, target text, gold, flip) of the RWTH set for a model translating
    ``src_lang`` → ``tgt_lang``: an En→De model reads ``deen.tgt`` (English) as its source and
    ``deen.src`` (German) as its target, and the gold links are flipped to match."""
    if root is None:
        raise DataError("--rwth needs the RWTH data: set LUONG_LIT_DATA or pass --rwth-dir")
    d = root / "rwth_deen_alignment" if (root / "rwth_deen_alignment").is_dir() else root
    pair = (src_lang, tgt_lang)
    if pair == ("de", "en"):
        return d / "deen.src", d / "deen.tgt", d / "deen.talp", False
    if pair == ("en", "de"):
        return d / "deen.tgt", d / "deen.src", d / "deen.talp", True
    raise DataError(
        f"the RWTH gold set is German-English; this model translates {src_lang}->{tgt_lang}"
    )


def model_tokens(line: str, recipe, vocab) -> list[str]:
    """A gold line's tokens, each in the form the model's training text has where the
    vocabulary knows that form (lowercased, escaped), else as written."""
    out = []
    for word in line.split():
        form = recipe.token(word)
        out.append(form if form in vocab.stoi else word)
    return out
