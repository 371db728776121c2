"""Tokenisers: Moses (sacremoses), whitespace for pre-tokenised text, and sentencepiece."""

from __future__ import annotations

import hashlib
import io
import re
from collections.abc import Sequence
from pathlib import Path

# Stanford WMT'14 marker for a split intra-word hyphen (docs/paper_notes.md §13)
AT_SEP = "##AT##-##AT##"


# The Stanford WMT'14 markers of an at sign, an underscore and an asterisk
_MARKERS = {"##at##": "@", "##underscore##": "_", "##star##": "*"}
_MARKER = re.compile("|".join(map(re.escape, _MARKERS)), re.IGNORECASE)
_SPLIT_HYPHEN = re.compile(rf"\s*(?:{re.escape(AT_SEP)}|@-@)\s*", re.IGNORECASE)


class PlainText:
    """Moses-tokenised text back to plain text, so that it can be tokenised again like raw
    text: split hyphens rejoined and Stanford markers undone, then Moses' detokeniser (which
    also undoes Moses' XML escapes). Corpora released only tokenised (the WMT samples of
    OpenNMT and of the paper's authors) then reach a vocabulary in the same forms as raw
    corpora beside them."""

    def __init__(self, lang: str) -> None:
        from sacremoses import MosesDetokenizer

        self._detok = MosesDetokenizer(lang)

    def __call__(self, line: str) -> str:
        line = _SPLIT_HYPHEN.sub("-", line)  # before the markers: "##AT##" alone is "@"
        line = _MARKER.sub(lambda m: _MARKERS[m.group(0).lower()], line)
        return self._detok.detokenize(line.split())


class WhitespaceTokenizer:
    """For pre-tokenised corpora: text is used as it is."""

    name = "none"

    def __init__(self, lowercase: bool = False) -> None:
        self.lowercase = lowercase

    def tokenize(self, line: str) -> list[str]:
        return (line.lower() if self.lowercase else line).split()

    def detokenize(self, tokens: Sequence[str]) -> str:
        return " ".join(tokens)


class MosesTokenizer:
    """Moses ``tokenizer.perl`` via sacremoses (byte-identical on German and English).

    ``aggressive=True`` is ``tokenizer.perl -a``: intra-word hyphens are split and marked as
    ``##AT##-##AT##``, the convention of the Stanford WMT'14 data used by the paper.
    """

    name = "moses"

    def __init__(
        self, lang: str, aggressive: bool = False, escape: bool = False, lowercase: bool = False
    ) -> None:
        from sacremoses import MosesDetokenizer
        from sacremoses import MosesTokenizer as _Tok

        self.lang, self.aggressive, self.escape, self.lowercase = (
            lang,
            aggressive,
            escape,
            lowercase,
        )
        self._tok, self._detok = _Tok(lang), MosesDetokenizer(lang)

    def tokenize(self, line: str) -> list[str]:
        line = line.lower() if self.lowercase else line
        toks = self._tok.tokenize(line, aggressive_dash_splits=self.aggressive, escape=self.escape)
        return [AT_SEP if t == "@-@" else t for t in toks]

    def detokenize(self, tokens: Sequence[str]) -> str:
        text = " ".join(tokens).replace(f" {AT_SEP} ", "-")
        return self._detok.detokenize(text.split())


class SentencePieceTokenizer:
    """A BPE or unigram model trained on the training split and cached by content hash."""

    name = "sentencepiece"

    def __init__(
        self,
        lines: Sequence[str],
        cache_dir: str | Path,
        model_type: str = "bpe",
        vocab_size: int = 8000,
        lowercase: bool = False,
    ) -> None:
        import sentencepiece as spm

        if model_type not in ("bpe", "unigram"):
            raise ValueError(
                f"sentencepiece model_type must be 'bpe' or 'unigram', got {model_type!r}"
            )
        self.lowercase = lowercase
        lines = [ln.lower() if lowercase else ln for ln in lines]
        digest = hashlib.sha256("\n".join(lines).encode()).hexdigest()[:16]
        path = Path(cache_dir) / f"spm-{model_type}-{vocab_size}-{digest}.model"
        if not path.is_file():
            buf = io.BytesIO()
            spm.SentencePieceTrainer.train(
                sentence_iterator=iter(lines),
                model_writer=buf,
                vocab_size=vocab_size,
                model_type=model_type,
                hard_vocab_limit=False,
                minloglevel=2,
                character_coverage=1.0,
                bos_id=-1,
                eos_id=-1,
                unk_id=0,
            )
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(".tmp")
            tmp.write_bytes(buf.getvalue())
            tmp.replace(path)
        self.model_path = path
        self._sp = spm.SentencePieceProcessor(model_file=str(path))

    @classmethod
    def from_proto(cls, proto: bytes, lowercase: bool = False) -> SentencePieceTokenizer:
        """A tokeniser from a serialised model (:meth:`proto`), as checkpoints keep it."""
        import sentencepiece as spm

        tok = cls.__new__(cls)
        tok.lowercase, tok.model_path = lowercase, None
        try:
            tok._sp = spm.SentencePieceProcessor(model_proto=proto)
        except (RuntimeError, TypeError) as err:
            raise ValueError(f"not a sentencepiece model ({err})") from None
        return tok

    def proto(self) -> bytes:
        """The serialised model, for :meth:`from_proto`."""
        return self._sp.serialized_model_proto()

    def tokenize(self, line: str) -> list[str]:
        return self._sp.encode(line.lower() if self.lowercase else line, out_type=str)

    def detokenize(self, tokens: Sequence[str]) -> str:
        return self._sp.decode_pieces(list(tokens))


def make_tokenizer(
    kind: str,
    lang: str,
    train_lines: Sequence[str] | None = None,
    cache_dir: str | Path | None = None,
    **opts,
):
    """Build a tokeniser by name: ``none``, ``moses`` or ``sentencepiece``."""
    if kind == "none":
        return WhitespaceTokenizer(lowercase=opts.get("lowercase", False))
    if kind == "moses":
        return MosesTokenizer(lang, **opts)
    if kind == "sentencepiece":
        if train_lines is None or cache_dir is None:
            raise ValueError("sentencepiece needs the training lines and a cache directory")
        return SentencePieceTokenizer(train_lines, cache_dir, **opts)
    raise ValueError(f"tokenizer={kind!r} is unknown; choose one of none, moses, sentencepiece")
