"""How a loaded model translates: what is fixed when it is loaded (:class:`LoadOptions`) apart
from what each call may change (:class:`SearchOptions`), both typed and checked when made.

``luong_lit.load`` takes both as keywords; ``translate``, ``evaluate`` and ``serve`` build them
from their arguments. A bad value raises :class:`~luong_lit.validate.OptionError`, which names
the option as Python does (``beam``); the command line names it as its flag (``--beam``,
:meth:`~luong_lit.validate.OptionError.flagged`).
A true/false option takes a bool only (:func:`boolean`), as the server's JSON takes true or
false only and the command line's flags give one.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from luong_lit.decoding.ensemble import COMBINE
from luong_lit.decoding.search import (
    AUTHORS,
    BeamSearch,
    Sampling,
    Search,
    parse_length_penalty,
)
from luong_lit.decoding.unk import CONVENTIONS
from luong_lit.decoding.workers import check_workers
from luong_lit.engines import ENGINES, INT8_PARTS
from luong_lit.translator.fields import option
from luong_lit.validate import OptionError, one_of, refuse_unknown

OVERLONG = ("truncate", "skip", "keep")
#: sampling's shaping options and their defaults (a search resets them)
SHAPING = {"temperature": 1.0, "top_k": 0, "top_p": 1.0}
#: a bad value of keyword options, named as the API names them (a command: as its flags)
bad = OptionError.keyword


def at_least(option: str, value: Any, low: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise bad(f"{{{option}}} must be an integer >= {low}, got {value!r}", option)


def boolean(option: str, value: Any) -> None:
    """A true/false option takes a bool: not a string (``"no"`` is no False) nor a number."""
    if not isinstance(value, bool):
        raise bad(f"{{{option}}} must be True or False, got {value!r}", option)


def check_device(device: Any) -> None:
    """A device this machine has: ``cpu``, ``cuda``/``cuda:N`` with a CUDA GPU there, ``mps``."""
    import torch

    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError):
        raise bad(f"{{device}} {device!r} is not a device (cpu, cuda, cuda:N)", "device") from None
    if dev.type == "cuda":
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if count == 0:
            raise bad(f"{{device}} {device}: this machine has no CUDA GPU (use cpu)", "device")
        if dev.index is not None and dev.index >= count:
            raise bad(f"{{device}} {device}: this machine has {count} CUDA GPU(s)", "device")
    elif dev.type == "mps" and not torch.backends.mps.is_available():
        raise bad(f"{{device}} {device}: MPS is not available here (use cpu)", "device")


@dataclass(frozen=True)
class LoadOptions:
    """What is fixed when a model is loaded.

    Computation: ``engine`` (``fast`` or ``reference``; the same translations), ``int8`` (the
    fast engine's 8-bit products: ``output`` or ``all``; CPU, approximate), ``device``,
    ``batch_size``, ``cuda_graphs`` (beam search's steps as CUDA graphs), ``workers`` (forked
    one-thread decoding processes, CPU). Ensembles:
    ``combine`` (``logits``, the authors' rule; ``log_probs``; ``probs``). Unknown words:
    ``dictionary`` (a ``src tgt [prob]`` file), ``align_convention`` (``paper``, footnote 14, or
    ``predicted``), how this model's attention is read. Input: ``pretokenized``,
    ``max_src_len`` and ``overlong`` (``truncate``, ``skip`` or ``keep`` longer sources).
    """

    engine: str = option("fast", "how the model is computed (the same translations): fast or "
                         "reference", group="load", choices=tuple(ENGINES))  # fmt: skip
    int8: str | None = option(
        None, "the fast engine's 8-bit products: of the output layer (--int8, --int8 output) or "
        "of every decoder product (--int8 all); CPU; faster, approximate (unset: float)",
        group="load", choices=INT8_PARTS, bare="output",
    )  # fmt: skip
    device: str = option("cpu", "torch device to decode on, e.g. cuda", group="load")
    combine: str = option("logits", "how an ensemble combines its members' scores (logits: the "
                          "authors' rule)", group="load", choices=COMBINE)  # fmt: skip
    dictionary: str | None = option(
        None, "'src tgt [prob]' dictionary for --replace-unk, which it implies (unset: copy the "
        "source word)", group="load", flag="--dict", implies="replace_unk",
    )  # fmt: skip
    align_convention: str = option(
        "paper", "which step's attention aligns a word: paper (footnote 14: the next step's for "
        "content-based scores) or predicted (the step that produced it)", group="load",
        choices=CONVENTIONS,
    )  # fmt: skip
    batch_size: int | None = option(None, "sentences decoded together (unset: 64 on a CPU; "
                                    "1,000 on a GPU, fewer past beam 5: a test set in few "
                                    "batches)", group="load")  # fmt: skip
    cuda_graphs: bool = option(False, "beam search on a CUDA GPU: each chunk of 8 steps one "
                               "CUDA graph, captured once a batch (not yet measured on a GPU)",
                               group="load")  # fmt: skip
    workers: int = option(1, "decode batches in N forked one-thread processes (CPU; up to one "
                          "per core)", group="load")  # fmt: skip
    pretokenized: bool = option(False, "input is already tokenised; output stays so",
                                group="input")  # fmt: skip
    max_src_len: int | None = option(None, "sources longer than this many tokens are overlong",
                                     group="input")  # fmt: skip
    overlong: str = option(
        "truncate", "what happens to an overlong source: cut to --max-src-len, left out (an "
        "empty translation), or decoded whole", group="input", choices=OVERLONG,
    )  # fmt: skip

    def __post_init__(self) -> None:
        if self.batch_size is not None:
            at_least("batch_size", self.batch_size, 1)
        at_least("workers", self.workers, 1)
        boolean("pretokenized", self.pretokenized)
        boolean("cuda_graphs", self.cuda_graphs)
        if self.max_src_len is not None:
            at_least("max_src_len", self.max_src_len, 1)
        one_of("combine", self.combine, COMBINE)
        one_of("align_convention", self.align_convention, CONVENTIONS)
        one_of("engine", self.engine, tuple(ENGINES))
        one_of("overlong", self.overlong, OVERLONG)
        if self.int8 is not None:
            one_of("int8", self.int8, INT8_PARTS)
            if self.engine != "fast":
                raise bad(f"{{int8}} is a form of the fast engine, not of {self.engine}", "int8")
        check_device(self.device)
        if self.cuda_graphs and not str(self.device).startswith("cuda"):
            raise bad(f"{{cuda_graphs}} captures beam search on a CUDA GPU, and {{device}} is "
                      f"{self.device}: decode on cuda, or leave it out",
                      "cuda_graphs", "device")  # fmt: skip
        try:
            check_workers(self.workers)
        except ValueError as err:
            raise bad(f"{{workers}}: {err}", "workers") from None
        if self.workers > 1 and self.device != "cpu":
            raise bad(
                f"{{workers}} above 1 decodes on the CPU only (device {self.device})", "workers"
            )


def number(option: str, value: Any) -> float:
    """A real number (an int or a float, not a bool), as a float."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise bad(f"{{{option}}} must be a number, got {value!r}", option)
    return float(value)


def check_sampling(opts: SearchOptions) -> None:
    """Sampling's options: a temperature above 0, ``top_k`` at least 0, ``top_p`` in (0, 1], an
    integer seed; and none of them without ``sampling``, which they would not change."""
    boolean("sampling", opts.sampling)
    if not number("temperature", opts.temperature) > 0:
        raise bad(f"{{temperature}} must be above 0, got {opts.temperature!r}", "temperature")
    at_least("top_k", opts.top_k, 0)
    if not 0 < number("top_p", opts.top_p) <= 1:
        raise bad(f"{{top_p}} must be in (0, 1], got {opts.top_p!r}", "top_p")
    if opts.seed is not None:
        at_least("seed", opts.seed, 0)
    for name, default in SHAPING.items():
        if getattr(opts, name) != default and not opts.sampling:
            raise bad(f"{{{name}}} shapes sampling: add {{sampling}}", name, "sampling")
    if opts.seed is not None and not opts.sampling:  # a search draws nothing to seed
        raise bad("{seed} seeds sampling's draws: add {sampling}", "seed", "sampling")
    beam_only = {"authors_decoder": opts.authors_decoder,
                 "length_penalty": opts.length_penalty not in (None, "none")}  # fmt: skip
    for name, given in beam_only.items():
        if opts.sampling and given:
            raise bad(f"{{{name}}} is for beam search; leave it out with {{sampling}}",
                            name, "sampling")  # fmt: skip


@dataclass(frozen=True)
class SearchOptions:
    """What each call may change: ``beam`` (1: greedy), ``n_best`` (the hypotheses kept),
    ``length_penalty`` (None: raw scores, the paper; ``avg``; or a GNMT alpha),
    ``max_len_ratio`` / ``min_len_ratio`` (output length bounds per source word; None: 1.5 plus
    5 words, and 0), ``authors_decoder`` (beam 12, 100 finished, raw score, the authors' length
    bounds) and ``replace_unk`` (unknown words replaced by their aligned source word, footnote
    14).

    ``sampling`` draws each word instead of searching (the beam does not apply; ``n_best``:
    the samples a text): from ``softmax(logits / temperature)``, cut to the ``top_k`` most
    probable words (0: all) and to the fewest whose probabilities reach ``top_p`` (1: all);
    ``seed`` (an integer) reproduces a call's samples (None: fresh ones each call).

    Each option is declared here once: the command line's flags, the server's request keys
    and the API's keywords are its fields (:mod:`luong_lit.translator.fields`)."""

    beam: int = option(5, "beam size; 1 = greedy decoding", request=True, count=True)
    n_best: int = option(1, "the hypotheses kept a sentence", group="n_best", request=True,
                         count=True)  # fmt: skip
    length_penalty: float | str | None = option(
        None, "rank finished hypotheses by: none (raw log-probabilities, the paper; unset), "
        "avg (per word), or a GNMT alpha such as 0.6",
    )  # fmt: skip
    max_len_ratio: float | None = option(
        None, "longest output per source word (unset: 1.5 plus 5 words; --authors-decoder: "
        "1.5 of S + 1)",
    )  # fmt: skip
    min_len_ratio: float | None = option(
        None, "shortest output per source word (unset: 0; --authors-decoder: 0.5 of S + 1)"
    )
    authors_decoder: bool = option(
        False, "the authors' search: beam 12, collect 100 finished, highest raw score"
    )
    replace_unk: bool = option(False, "replace <unk> via attention (footnote 14)", request=True)
    sampling: bool = option(
        False, "draw each word from the model's distribution (torch.multinomial) instead of "
        "searching; --n-best N: N samples a sentence; --beam does not apply",
        group="sampling", request=True,
    )  # fmt: skip
    temperature: float = option(
        1.0, "sampling: divide the scores by this before the softmax (towards 0: greedy)",
        group="sampling", request=True,
    )  # fmt: skip
    top_k: int = option(
        0, "sampling: from the K most probable words only (0: all)", group="sampling",
        aliases=("--sampling-topk",), request=True,
    )  # fmt: skip
    top_p: float = option(
        1.0, "sampling: from the fewest most probable words whose probabilities reach P "
        "(nucleus sampling; 1: all)", group="sampling", aliases=("--sampling-topp",),
        request=True,
    )  # fmt: skip
    seed: int | None = option(
        None, "sampling: the seed of the draws; the same input, seed and --batch-size give "
        "the same samples (unset: new ones each run)", group="sampling", request=True,
    )  # fmt: skip

    def __post_init__(self) -> None:
        at_least("beam", self.beam, 1)
        at_least("n_best", self.n_best, 1)
        boolean("authors_decoder", self.authors_decoder)
        boolean("replace_unk", self.replace_unk)
        check_sampling(self)
        self.search()  # the options make a search

    def replace(self, **changes: Any) -> SearchOptions:
        """These options with ``changes``, checked."""
        known = [f.name for f in dataclasses.fields(self)]
        refuse_unknown(SearchOptions, known, changes, keywords=True)
        return dataclasses.replace(self, **changes)

    def search(self) -> Search:
        """The search these options ask for; beam size 1 runs as greedy search with the same
        length bounds."""
        try:
            penalty = parse_length_penalty(self.length_penalty)
        except ValueError as err:
            raise bad(f"{{length_penalty}}: {err}", "length_penalty") from None
        cfg: Search
        if self.authors_decoder:
            if penalty is not None:
                raise bad(
                    "{authors_decoder} ranks by raw score; leave out {length_penalty}",
                    "authors_decoder", "length_penalty",
                )  # fmt: skip
            cfg = dataclasses.replace(AUTHORS, n_best=self.n_best)
        elif self.sampling:
            cfg = Sampling(n_best=self.n_best, temperature=float(self.temperature),
                           top_k=self.top_k, top_p=float(self.top_p), seed=self.seed)  # fmt: skip
        else:
            cfg = BeamSearch(beam=self.beam, n_best=self.n_best, length_penalty=penalty)
        if isinstance(cfg, BeamSearch) and self.n_best > cfg.beam:
            raise bad(
                f"{{n_best}} {self.n_best} needs a beam of at least {self.n_best} "
                f"(the beam is {cfg.beam})", "n_best",
            )  # fmt: skip
        ratios: dict[str, Any] = {"max_len_ratio": self.max_len_ratio,
                                  "min_len_ratio": self.min_len_ratio}  # fmt: skip
        cfg = dataclasses.replace(cfg, **{k: v for k, v in ratios.items() if v is not None})
        if cfg.min_len_ratio < 0 or cfg.min_len_ratio > cfg.max_len_ratio:
            raise bad(
                f"{{min_len_ratio}} {cfg.min_len_ratio} and {{max_len_ratio}} "
                f"{cfg.max_len_ratio} must be at least 0, the first no larger than the second",
                "min_len_ratio", "max_len_ratio",
            )  # fmt: skip
        return cfg
