"""How text reaches a model and leaves it, one object per model: the kinds differ by class.

* :class:`TokenizedText`: the kit's own tokenisers (whitespace for pre-tokenised text, Moses,
  sentencepiece), whose output the same tokeniser joins again.
* :class:`RecipeText`: a corpus released tokenised (Multi30k's ``lc.norm.tok``): its recipe is
  redone on raw input, and undone on the output, which is recased; words copied from the source
  keep the case they were typed in.

Both turn a line into a :class:`SourceLine` (the tokens the model reads, and the words as typed),
tokenise a given translation, render output tokens as text, and show either side's tokens as a
reader sees them (the attention page, ``--show-attention``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from luong_lit.data.text.preprocess import Preprocessing, RecipeDetokenizer, RecipeTokenizer


class SourceLine(NamedTuple):
    """A line as the model reads it: ``tokens``; and ``typed``, the same words with the case they
    were typed in, where output words copied from the source keep it (else None)."""

    tokens: list[str]
    typed: list[str] | None = None


class TokenizedText:
    """Text through tokenisers of the kit: ``source`` and ``target`` tokenise each side, the
    target's ``detokenize`` joins the output."""

    def __init__(self, source, target) -> None:
        self.source_tokenizer, self.target_tokenizer = source, target

    def source(self, line: str) -> SourceLine:
        return SourceLine(self.source_tokenizer.tokenize(line))

    def target_tokens(self, line: str) -> list[str]:
        """A given translation's tokens (to score or align it)."""
        return self.target_tokenizer.tokenize(line)

    def render(self, words: Sequence[str], source: SourceLine) -> str:
        """Output tokens as text."""
        return self.target_tokenizer.detokenize(list(words))

    def show_source(self, source: SourceLine) -> list[str]:
        """The source's tokens as a reader sees them."""
        return list(source.tokens)

    def show_target(self, words: Sequence[str], source: SourceLine) -> list[str]:
        """The output's tokens as a reader sees them."""
        return list(words)


class RecipeText(TokenizedText):
    """Raw text made the way a released corpus was (``recipe``), and the output made natural
    again: detokenised, escapes undone and, for a lowercased corpus, recased (``recaser``)."""

    def __init__(self, recipe: Preprocessing, src_lang: str, tgt_lang: str, recaser=None) -> None:
        super().__init__(RecipeTokenizer(recipe, src_lang), RecipeTokenizer(recipe, tgt_lang))
        self.recipe = recipe
        self.detokenizer = RecipeDetokenizer(recipe, tgt_lang, recaser)

    def source(self, line: str) -> SourceLine:
        tok = self.source_tokenizer
        return SourceLine(tok.tokenize(line), tok.cased(line))

    def render(self, words: Sequence[str], source: SourceLine) -> str:
        return self.detokenizer.detokenize(list(words), source.typed)

    def show_source(self, source: SourceLine) -> list[str]:
        typed = (source.typed or [])[: len(source.tokens)]
        if len(typed) != len(source.tokens):
            return list(source.tokens)
        return [self.recipe.show(w) for w in typed]

    def show_target(self, words: Sequence[str], source: SourceLine) -> list[str]:
        return self.detokenizer.words(list(words), source.typed)
