"""Where corpora come from: the registry of named corpora, their download from the official
sources (checksummed and cached) or a local mirror (``LUONG_LIT_DATA``), and IWSLT'14's archive.

A corpus of one's own is named by :func:`register_corpus`, its files described as
:class:`Source` (and :class:`Remote`); the kit's own are registered on import, here."""

from luong_lit.data.sources import registry as _builtin  # noqa: F401 - registers the kit's corpora
from luong_lit.data.sources.fetch import Remote, Source
from luong_lit.data.sources.named import CORPORA, NamedCorpus, corpus_source, register_corpus

__all__ = ["CORPORA", "NamedCorpus", "Remote", "Source", "corpus_source", "register_corpus"]
