"""Callbacks: target-token throughput, greedy BLEU and beam BLEU (with unk replacement).

The BLEU callbacks score the dev set during training and every test set in ``trainer.test``,
through :class:`luong_lit.inference.Inference`, as every command decodes; chrF, chrF++ and TER
of the same lines beside BLEU (:mod:`luong_lit.metrics.chrf_ter`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence

import lightning as L
import torch

from luong_lit.data.loading.batching import Batch
from luong_lit.data.text.dictionary import load_dictionary
from luong_lit.decoding.corpus import batch_size_for
from luong_lit.decoding.search import parse_length_penalty
from luong_lit.errors import ConfigError
from luong_lit.inference import Inference
from luong_lit.metrics.bleu import bleu_lines, corpus_bleu_tok
from luong_lit.metrics.chrf_ter import NAMES, corpus_chrf_ter, words_scores
from luong_lit.metrics.signatures import labelled
from luong_lit.training.figures import test_figure
from luong_lit.training.loggers import log_samples
from luong_lit.training.progress import decode_progress
from luong_lit.training.sharded import split_words
from luong_lit.translator.options import SearchOptions
from luong_lit.validate import OptionError, integer, one_of

log = logging.getLogger(__name__)


class ThroughputMonitor(L.Callback):
    """Logs ``train/tgt_tok_per_s``: non-pad target tokens (``</s>`` included) per wall second.

    The window runs from one log point to the next, so it covers data loading, the forward
    and backward passes and the optimizer step. On a GPU it also logs ``train/gpu_peak_mib``,
    the most memory torch has held allocated since the start (flat once every shape has been
    met), ``train/gpu_mib``, what it holds at the log point, and, with captured steps,
    ``train/graphs``, the CUDA graphs captured so far.
    """

    def __init__(self, every_n_steps: int = 50) -> None:
        self.every = every_n_steps
        self._t0: float | None = None
        self._tokens = 0
        self._steps = 0

    def on_train_epoch_start(self, trainer, pl_module) -> None:
        self._t0, self._tokens, self._steps = time.perf_counter(), 0, 0

    def on_train_batch_end(self, trainer, pl_module, outputs, batch: Batch, batch_idx: int) -> None:
        if self._t0 is None:  # resumed inside an epoch, whose start hook has run before
            self._t0 = time.perf_counter()
            return
        self._tokens += batch.num_tgt_tokens  # counted on the host by collate: no device read
        self._steps += 1
        if self._steps >= self.every:
            dt = time.perf_counter() - self._t0
            pl_module.log("train/tgt_tok_per_s", self._tokens / dt, on_step=True, on_epoch=False)
            for name, value in _device_figures(pl_module).items():
                pl_module.log(name, value, on_step=True, on_epoch=False)
            self._t0, self._tokens, self._steps = time.perf_counter(), 0, 0


def _device_figures(pl_module) -> dict[str, float]:
    """GPU memory (MiB): the most torch has held allocated so far, and what it holds now; and
    the graphs captured. Torch's peak is read, never reset (a benchmark may read it too)."""
    if pl_module.device.type != "cuda":
        return {}
    out = {
        "train/gpu_peak_mib": torch.cuda.max_memory_allocated(pl_module.device) / 2**20,
        "train/gpu_mib": torch.cuda.memory_allocated(pl_module.device) / 2**20,
    }
    graphs = getattr(getattr(pl_module, "engine", None), "captured_graphs", None)
    if graphs is not None:
        out["train/graphs"] = float(graphs)
    return out


def _say_limit(trainer, key: str, what: str, then: str) -> None:
    """One line where ``trainer.KEY`` shortens the perplexity pass: BLEU still decodes all."""
    limit = getattr(trainer, key)  # an int: batches; a float: a share of them
    if limit is not None and (isinstance(limit, int) or limit < 1.0):
        log.info("trainer.%s=%s shortens the perplexity pass of %s; BLEU decodes all its "
                 "sentences (%s)", key, limit, what, then)  # fmt: skip


def _check_every(every_n_epochs, batch_size, max_sentences) -> None:
    integer("every_n_epochs", every_n_epochs, 0)
    integer("batch_size", batch_size, 1, nullable=True)
    integer("max_sentences", max_sentences, 1, nullable=True)


def _check_monitored(trainer, dev_scores: Sequence[str]) -> None:
    """A dev score that selects, stops (``select_by``) or schedules the rate
    (``model.scheduler.monitor``) must be logged: one line if it is not."""
    from luong_lit.training.lr_steps import stepped_on_validation

    readers = [("select_by", getattr(cb, "monitor", None)) for cb in trainer.callbacks]
    readers += [("model.scheduler.monitor", getattr(s, "monitor", None))
                for s in stepped_on_validation(trainer)]  # fmt: skip
    for option, monitor in readers:
        name = str(monitor or "").removeprefix("val/")
        if name in NAMES and name not in dev_scores:
            raise ConfigError(
                f"{option}={name} reads val/{name}, which callbacks.greedy_bleu.dev_scores="
                f"[{', '.join(dev_scores)}] leaves out: add {name} to it"
            )


def _check_dev_scores(dev_scores) -> tuple[str, ...]:
    """``dev_scores`` as a tuple of known names; one line for a name alone or a null."""
    if isinstance(dev_scores, str) or not isinstance(dev_scores, Sequence):
        raise OptionError("dev_scores", dev_scores, "must be a list of scores ([] for BLEU "
                          f"alone, e.g. [{', '.join(NAMES)}])")  # fmt: skip
    for name in dev_scores:
        one_of("dev_scores", name, NAMES)
    return tuple(dev_scores)


def _due(trainer, every: int) -> bool:
    """Whether a dev-set callback runs after this epoch's validation."""
    return bool(every) and not trainer.sanity_checking and (trainer.current_epoch + 1) % every == 0


class GreedyBleuCallback(L.Callback):
    """Greedy-decodes the dev set every ``every_n_epochs`` epochs and logs ``val/bleu``,
    ``val/chrf``, ``val/chrfpp`` (chrF++) and ``val/ter``, and every test set in ``trainer.test``
    (``test/<name>/bleu_greedy``, ``chrf_greedy``, ``chrfpp_greedy``, ``ter_greedy``).

    BLEU is tokenised and case-sensitive (multi-bleu.perl equivalent, hyphens rejoined); chrF,
    chrF++ and TER read the same lines. Their sacreBLEU signatures are logged when training
    starts. ``dev_scores``: the scores logged beside ``val/bleu`` at each validation (some of
    ``chrf``, ``chrfpp``, ``ter``; ``[]``: BLEU alone, as Joey NMT's ``eval_metrics`` or
    OpenNMT-py's ``valid_metrics`` choose); the test sets always get all four.
    """

    def __init__(
        self,
        every_n_epochs: int = 1,
        batch_size: int | None = None,
        max_sentences: int | None = None,
        samples: int = 5,
        dev_scores: Sequence[str] = NAMES,
    ) -> None:
        _check_every(every_n_epochs, batch_size, max_sentences)
        self.every, self.batch_size, self.max_sentences = every_n_epochs, batch_size, max_sentences
        self.samples = samples  # sample translations sent to loggers that take tables
        self.dev_scores = _check_dev_scores(dev_scores)

    def on_fit_start(self, trainer, pl_module) -> None:
        _check_monitored(trainer, self.dev_scores)
        if trainer.is_global_zero:
            names = ("bleu_tok", *NAMES)
            log.info("dev and test scores, sacreBLEU: %s", "; ".join(map(labelled, names)))
            _say_limit(trainer, "limit_val_batches", "the dev set", "callbacks.greedy_bleu."
                       "max_sentences sets BLEU's")  # fmt: skip

    def on_test_start(self, trainer, pl_module) -> None:
        if trainer.is_global_zero:
            _say_limit(trainer, "limit_test_batches", "each test set", "results.json says how "
                       "many each figure covers: sentences_ppl, sentences_bleu")  # fmt: skip

    def on_validation_epoch_end(self, trainer, pl_module) -> None:
        if not _due(trainer, self.every):
            return
        dm, dev = trainer.datamodule, trainer.datamodule.splits["dev"]
        tok = dm.tokenizers.get("tgt")
        inference = Inference(pl_module.net, dm.tgt_vocab, engine=pl_module.engine)
        n = len(dev.src_ids[: self.max_sentences])
        tick = decode_progress(trainer, "validation: greedy BLEU of the dev set", n)
        size = batch_size_for(pl_module.device, self.batch_size, cpu=128)  # unset: the device's
        words, _ = split_words(trainer, inference, dev, batch_size=size,
                               max_sentences=self.max_sentences, progress=tick)  # fmt: skip
        hyps, refs = bleu_lines(words, tok), bleu_lines(dev.tgt_tokens[: len(words)], tok)
        pl_module.log("val/bleu", corpus_bleu_tok(hyps, refs), prog_bar=True)
        for name, value in corpus_chrf_ter(hyps, refs, names=self.dev_scores).items():
            pl_module.log(f"val/{name}", value)  # val/chrf, val/chrfpp, val/ter
        if trainer.is_global_zero:
            rows = [
                (" ".join(dev.src_tokens[i]), refs[i], hyps[i])
                for i in range(min(self.samples, len(hyps)))
            ]
            log_samples(
                trainer, "val/samples", ("source", "reference", "greedy"), rows, trainer.global_step
            )

    def on_test_epoch_end(self, trainer, pl_module) -> None:
        dm = trainer.datamodule
        inference = Inference(pl_module.net, dm.tgt_vocab, engine=pl_module.engine)
        for name in dm.test_spec:
            split = dm.splits[name]
            tick = decode_progress(trainer, f"test {name}: greedy BLEU", len(split.src_ids))
            size = batch_size_for(pl_module.device, self.batch_size, cpu=128)
            words, _ = split_words(trainer, inference, split, batch_size=size,
                                   progress=tick)  # fmt: skip
            scores = words_scores({"greedy": words}, split.tgt_tokens, dm.tokenizers.get("tgt"))
            for key, value in scores.items():  # bleu_greedy, chrf_greedy, ...
                test_figure(pl_module, name, key, value)
            test_figure(pl_module, name, "sentences_bleu", len(words))


class BeamBleuCallback(L.Callback):
    """Beam decoding, unk replacement and BLEU on the dev set every ``every_n_epochs`` epochs
    (``val/bleu_beam``, ``val/bleu_beam_unk``) and on every test set in ``trainer.test``
    (``test/<name>/bleu_beam``, ``test/<name>/bleu_beam_unk``); chrF, chrF++ and TER beside
    them (``chrf_beam``, ``chrf_beam_unk``, ``chrfpp_beam``, ``ter_beam``, ...: the names of
    :class:`luong_lit.reports.TestFigures`).

    ``dictionary``: an optional ``src tgt [prob]`` file for unk replacement
    (docs/paper_notes.md §9).
    ``length_penalty``: None (raw scores, the paper), ``"avg"`` or a GNMT α, as in ``evaluate``.
    ``on_test``: False leaves the test sets to greedy BLEU alone.
    """

    def __init__(
        self,
        every_n_epochs: int = 1,
        beam: int = 5,
        batch_size: int | None = None,
        replace_unk: bool = True,
        dictionary: str | None = None,
        max_sentences: int | None = None,
        length_penalty: float | str | None = None,
        on_test: bool = True,
    ) -> None:
        _check_every(every_n_epochs, batch_size, max_sentences)
        integer("beam", beam, 1)
        try:
            penalty = parse_length_penalty(length_penalty)
        except ValueError:
            why = "is not none, avg or a number"
            raise OptionError("length_penalty", length_penalty, why) from None
        self.every, self.batch_size, self.max_sentences = every_n_epochs, batch_size, max_sentences
        self.search = SearchOptions(beam=beam, length_penalty=penalty).search()  # the one record
        self.replace_unk, self.dictionary_path, self.on_test = replace_unk, dictionary, on_test
        self._dictionary = None

    def _scores(self, pl_module, split, what: str) -> dict[str, float]:
        if self.dictionary_path and self._dictionary is None:
            self._dictionary = load_dictionary(self.dictionary_path)
        trainer = pl_module.trainer
        dm = trainer.datamodule
        inference = Inference(pl_module.net, dm.tgt_vocab, engine=pl_module.engine)
        n = len(split.src_ids[: self.max_sentences])
        tick = decode_progress(trainer, f"{what}: beam-{self.search.beam} BLEU", n)
        words, replaced = split_words(
            trainer, inference, split, search=self.search,
            batch_size=batch_size_for(pl_module.device, self.batch_size, 64, self.search.beam),
            max_sentences=self.max_sentences, replace_unk=self.replace_unk,
            dictionary=self._dictionary, progress=tick,
        )  # fmt: skip
        outputs = {"beam": words, "beam_unk": replaced}
        return words_scores(outputs, split.tgt_tokens, dm.tokenizers.get("tgt"))

    def on_validation_epoch_end(self, trainer, pl_module) -> None:
        if not _due(trainer, self.every):
            return
        dev = trainer.datamodule.splits["dev"]
        for key, value in self._scores(pl_module, dev, "validation").items():
            pl_module.log(f"val/{key}", value)

    def on_test_epoch_end(self, trainer, pl_module) -> None:
        if not self.on_test:
            return
        for name in trainer.datamodule.test_spec:
            split = trainer.datamodule.splits[name]
            for key, value in self._scores(pl_module, split, f"test {name}").items():
                test_figure(pl_module, name, key, value)
