"""How a corpus's released text was made from raw text: redone on raw input, undone on output.

A model trained on Multi30k's ``lc.norm.tok`` release has seen lowercased, punctuation-normalised,
Moses-tokenised text; raw input must be made the same way before it is translated, and the output
detokenised and recased after. :data:`RECIPES` holds the recipe of every named corpus whose
released text is tokenised; ``data.preprocess`` sets one for ``data=files``. The checkpoint keeps
the recipe (``luong_lit.preprocess``), so ``translate`` needs nothing else.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from functools import lru_cache

from luong_lit.errors import ConfigError


@dataclass(frozen=True)
class Preprocessing:
    """The steps, in order: lowercase, Moses punctuation normalisation, Moses tokenisation.

    ``aggressive``: ``tokenizer.perl -a`` (intra-word hyphens split, ``##AT##-##AT##``);
    ``escape``: XML escaping of ``& < > ' "`` as the Moses tokeniser does by default;
    ``lowercase_last``: lowercase after tokenising rather than before (it matters: Moses splits
    a full stop off a word only before an upper-case letter or the end of the line).
    """

    lowercase: bool = False
    normalize_punct: bool = False
    moses: bool = False
    aggressive: bool = False
    escape: bool = False
    lowercase_last: bool = False

    @classmethod
    def from_dict(cls, spec: Mapping | None, where: str = "data.preprocess") -> Preprocessing:
        spec = dict(spec or {})
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(spec) - known)
        if unknown:
            raise ConfigError(f"{where}: unknown step(s) {unknown}; known: {sorted(known)}")
        return cls(**{k: bool(v) for k, v in spec.items()})

    def to_dict(self) -> dict[str, bool]:
        return asdict(self)

    def cased(self) -> Preprocessing:
        """The same recipe without lowercasing."""
        return Preprocessing(**{**self.to_dict(), "lowercase": False})

    @property
    def identity(self) -> bool:
        return not any(asdict(self).values())

    def apply(self, line: str, lang: str) -> list[str]:
        """Raw text in, the corpus's tokens out."""
        if self.lowercase and not self.lowercase_last:
            line = line.lower()
        if self.normalize_punct:
            line = _normalizer(lang).normalize(line)
        if self.moses:
            from luong_lit.data.text.tokenize import MosesTokenizer

            tokens = MosesTokenizer(lang, self.aggressive, self.escape).tokenize(line)
        else:
            tokens = line.split()
        return [t.lower() for t in tokens] if self.lowercase and self.lowercase_last else tokens

    def token(self, word: str) -> str:
        """One already-tokenised word as the corpus writes it (lowercased, escaped), for text
        that must keep its tokens one for one, such as a gold alignment set."""
        if self.lowercase:
            word = word.lower()
        if self.escape:
            word = "".join(_ESCAPES.get(c, c) for c in word)
        return word

    def show(self, token: str) -> str:
        """One token as a reader sees it: XML escapes undone."""
        return _unescape(token) if self.escape else token

    def undo(self, tokens: Sequence[str], lang: str) -> str:
        """Tokens out of the model, as text: detokenised (casing is the recaser's business)."""
        if not self.moses:
            return " ".join(tokens)
        from luong_lit.data.text.tokenize import MosesTokenizer

        text = MosesTokenizer(lang, self.aggressive).detokenize(list(tokens))
        return _unescape(text) if self.escape else text


# Moses' tokenizer.perl escaping, character by character
_ESCAPES = {"&": "&amp;", "|": "&#124;", "<": "&lt;", ">": "&gt;", "'": "&apos;", '"': "&quot;"}
_ESCAPES.update({"[": "&#91;", "]": "&#93;"})


@lru_cache(maxsize=8)
def _normalizer(lang: str):
    from sacremoses import MosesPunctNormalizer

    return MosesPunctNormalizer(lang)


def _unescape(text: str) -> str:
    for escaped, char in (("&amp;", "&"), ("&lt;", "<"), ("&gt;", ">"), ("&apos;", "'")):
        text = text.replace(escaped, char)
    return text.replace("&quot;", '"').replace("&#124;", "|").replace("&#91;", "[")


RAW = Preprocessing()
RECIPES: dict[tuple[str, str], Preprocessing] = {
    # multi30k/dataset's task1-tokenize.sh: lowercase, normalise, tokenise
    ("multi30k", "tok"): Preprocessing(
        lowercase=True, normalize_punct=True, moses=True, escape=True
    ),
    # Ranzato et al. (2015)'s IWSLT'14 preparation: Moses, escaped, lowercased
    ("iwslt14_deen", "tok"): Preprocessing(
        lowercase=True, moses=True, escape=True, lowercase_last=True
    ),
}


def recipe_for(data: Mapping) -> Preprocessing:
    """The recipe of a data config: ``data.preprocess`` if set, else the named corpus's."""
    if data.get("preprocess") is not None:
        return Preprocessing.from_dict(data["preprocess"])
    key = (str(data.get("dataset", "")), str(data.get("variant", "")))
    return RECIPES.get(key, RAW)


class RecipeTokenizer:
    """Raw source text made the way the training corpus was (``translate``'s input side)."""

    name = "recipe"

    def __init__(self, recipe: Preprocessing, lang: str) -> None:
        self.recipe, self.lang = recipe, lang
        self._cased = recipe.cased()

    def tokenize(self, line: str) -> list[str]:
        return self.recipe.apply(line, self.lang)

    def cased(self, line: str) -> list[str]:
        """The same tokens with the input's casing (for words copied into the output)."""
        return self._cased.apply(line, self.lang)

    def detokenize(self, tokens: Sequence[str]) -> str:
        return self.recipe.undo(tokens, self.lang)


class RecipeDetokenizer:
    """Output tokens as text: recased (when the model is lowercase and a recaser is known) and
    detokenised the way the recipe tokenised."""

    name = "recipe"

    def __init__(self, recipe: Preprocessing, lang: str, recaser=None) -> None:
        self.recipe, self.lang, self.recaser = recipe, lang, recaser

    def detokenize(self, tokens: Sequence[str], source: Sequence[str] = ()) -> str:
        return self.recipe.undo(self._recased(tokens, source), self.lang)

    def words(self, tokens: Sequence[str], source: Sequence[str] = ()) -> list[str]:
        """The output tokens one by one as a reader sees them: recased, escapes undone."""
        return [self.recipe.show(w) for w in self._recased(tokens, source)]

    def _recased(self, tokens: Sequence[str], source: Sequence[str]) -> list[str]:
        words = list(tokens)
        if self.recaser is not None and self.recipe.lowercase:
            words = self.recaser(words, source)
        return words
