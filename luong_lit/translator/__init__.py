"""The kit from Python: :func:`load` gives a :class:`Translator` of one checkpoint or an
ensemble, with its load-time :class:`LoadOptions` and default :class:`SearchOptions`."""

from luong_lit.translator.attention import AttentionMap
from luong_lit.translator.options import LoadOptions, SearchOptions
from luong_lit.translator.outputs import Output, Scored, TokenScores
from luong_lit.translator.translator import Translator, load

__all__ = [
    "AttentionMap",
    "LoadOptions",
    "Output",
    "Scored",
    "SearchOptions",
    "TokenScores",
    "Translator",
    "load",
]
