"""How a loaded model translates: typed options with defaults, checked when they are made.

:class:`DecodeOptions` is what :func:`luong_lit.load` takes as keywords and what the commands
(``translate``, ``evaluate``, ``serve``) build from their arguments. A bad value raises a
:class:`~luong_lit.errors.UsageError` that names the option, as ``beam`` from Python and as
``--beam`` from the command line.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from luong_lit.decoding.beam import AUTHORS, BeamConfig, parse_length_penalty
from luong_lit.decoding.ensemble import COMBINE
from luong_lit.decoding.unk import CONVENTIONS
from luong_lit.decoding.workers import check_workers
from luong_lit.engines import ENGINES, INT8_PARTS
from luong_lit.errors import UsageError

OVERLONG = ("truncate", "skip", "keep")


@dataclass
class DecodeOptions:
    """Decoding options (the commands' options of the same names, ``_`` for ``-``).

    Search: ``beam`` (1: greedy), ``length_penalty`` (None: raw scores, the paper; ``avg``; or
    a GNMT alpha), ``max_len_ratio`` / ``min_len_ratio`` (output length bounds per source
    word; None: 1.5 plus 5 words, and 0), ``authors_decoder`` (beam 12, 100 finished, raw
    score, the authors' length bounds). Ensembles: ``combine`` (``logits``, the authors' rule;
    ``log_probs``; ``probs``). Unknown words: ``replace_unk`` (footnote 14), ``dictionary`` (a
    ``src tgt [prob]`` file), ``align_convention`` (``paper`` or ``predicted``). Computation:
    ``engine`` (``fast`` or ``reference``; the same translations), ``int8`` (the fast engine's
    8-bit products: ``output`` or ``all``; CPU, approximate), ``device``, ``batch_size``,
    ``workers`` (forked one-thread decoding processes, CPU). Input: ``pretokenized``,
    ``max_src_len`` and ``overlong`` (``truncate``, ``skip`` or ``keep`` longer sources).
    """

    beam: int = 5
    length_penalty: float | str | None = None
    max_len_ratio: float | None = None
    min_len_ratio: float | None = None
    authors_decoder: bool = False
    combine: str = "logits"
    replace_unk: bool = False
    dictionary: str | None = None
    align_convention: str = "paper"
    engine: str = "fast"
    int8: str | None = None
    device: str = "cpu"
    batch_size: int = 64
    workers: int = 1
    pretokenized: bool = False
    max_src_len: int | None = None
    overlong: str = "truncate"
    cli: bool = field(default=False, repr=False, compare=False)  # name options as --flags

    def __post_init__(self) -> None:
        for name in ("beam", "batch_size", "workers"):
            self._at_least(name, getattr(self, name), 1)
        if self.max_src_len is not None:
            self._at_least("max_src_len", self.max_src_len, 1)
        self._one_of("combine", self.combine, COMBINE)
        self._one_of("align_convention", self.align_convention, CONVENTIONS)
        self._one_of("engine", self.engine, tuple(ENGINES))
        self._one_of("overlong", self.overlong, OVERLONG)
        if self.int8 is not None:
            self._one_of("int8", self.int8, INT8_PARTS)
            if self.engine != "fast":
                raise UsageError(
                    f"{self.name('int8')} is a form of the fast engine, not of {self.engine}"
                )
        try:
            check_workers(self.workers)
        except ValueError as err:
            raise UsageError(f"{self.name('workers')}: {err}") from None
        if self.workers > 1 and self.device != "cpu":
            raise UsageError(
                f"{self.name('workers')} above 1 decodes on the CPU only (device {self.device})"
            )
        self.search()  # the search options make a search

    def name(self, option: str) -> str:
        """``option`` as the user wrote it: ``beam`` in Python, ``--beam`` on the command line."""
        return "--" + option.replace("_", "-") if self.cli else option

    def _at_least(self, option: str, value, low: int) -> None:
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise UsageError(f"{self.name(option)} must be an integer >= {low}, got {value!r}")

    def _one_of(self, option: str, value, allowed) -> None:
        if value not in allowed:
            raise UsageError(f"{self.name(option)} {value!r}: choose one of {', '.join(allowed)}")

    def search(self, n_best: int = 1) -> BeamConfig:
        """The search these options ask for, keeping ``n_best`` hypotheses; beam size 1 runs
        as greedy search with the same length bounds."""
        try:
            penalty = parse_length_penalty(self.length_penalty)
        except ValueError as err:
            raise UsageError(f"{self.name('length_penalty')}: {err}") from None
        if self.authors_decoder:
            if penalty is not None:
                raise UsageError(
                    f"{self.name('authors_decoder')} ranks by raw score; leave out "
                    f"{self.name('length_penalty')}"
                )
            cfg = dataclasses.replace(AUTHORS, n_best=n_best)
        else:
            cfg = BeamConfig(beam_size=self.beam, n_best=n_best, length_penalty=penalty)
        if n_best > cfg.beam_size:
            raise UsageError(
                f"{self.name('n_best')} {n_best} needs a beam of at least {n_best} "
                f"(the beam is {cfg.beam_size})"
            )
        ratios = {"max_len_ratio": self.max_len_ratio, "min_len_ratio": self.min_len_ratio}
        cfg = dataclasses.replace(cfg, **{k: v for k, v in ratios.items() if v is not None})
        if cfg.min_len_ratio < 0 or cfg.min_len_ratio > cfg.max_len_ratio:
            raise UsageError(
                f"{self.name('min_len_ratio')} {cfg.min_len_ratio} and "
                f"{self.name('max_len_ratio')} {cfg.max_len_ratio} must be at least 0, the "
                "first no larger than the second"
            )
        return cfg
