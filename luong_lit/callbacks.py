"""Callbacks: target-token throughput, greedy BLEU and beam BLEU (with unk replacement)."""
from __future__ import annotations

import time

import lightning as L
from luong_lit.data.batching import Batch
from luong_lit.data.dictionary import load_dictionary
from luong_lit.decoding.beam import BeamConfig, parse_length_penalty
from luong_lit.decoding.corpus import decode_corpus, output_words
from luong_lit.loggers import log_samples
from luong_lit.metrics import corpus_bleu_tok
from luong_lit.metrics.bleu import bleu_lines


class ThroughputMonitor(L.Callback):
    """Logs ``train/tgt_tok_per_s``: non-pad target tokens (``</s>`` included) per wall second.

    The window runs from one log point to the next, so it covers data loading, the forward
    and backward passes and the optimizer step.
    """

    def __init__(self, every_n_steps: int = 50) -> None:
        self.every = every_n_steps
        self._t0: float | None = None
        self._tokens = 0
        self._steps = 0

    def on_train_epoch_start(self, trainer, pl_module) -> None:
        self._t0, self._tokens, self._steps = time.perf_counter(), 0, 0

    def on_train_batch_end(self, trainer, pl_module, outputs, batch: Batch, batch_idx: int) -> None:
        self._tokens += batch.num_tgt_tokens
        self._steps += 1
        if self._steps >= self.every:
            dt = time.perf_counter() - self._t0
            pl_module.log("train/tgt_tok_per_s", self._tokens / dt, on_step=True, on_epoch=False)
            self._t0, self._tokens, self._steps = time.perf_counter(), 0, 0


class GreedyBleuCallback(L.Callback):
    """Greedy-decodes the dev set every ``every_n_epochs`` epochs and logs ``val/bleu``.

    BLEU is tokenised and case-sensitive (multi-bleu.perl equivalent, hyphens rejoined).
    """

    def __init__(self, every_n_epochs: int = 1, batch_size: int = 128, max_sentences: int | None = None,
                 samples: int = 5) -> None:
        self.every, self.batch_size, self.max_sentences = every_n_epochs, batch_size, max_sentences
        self.samples = samples  # sample translations sent to loggers that take tables

    def on_validation_epoch_end(self, trainer, pl_module) -> None:
        if trainer.sanity_checking or (trainer.current_epoch + 1) % self.every:
            return
        dm = trainer.datamodule
        hyps = translate_split(pl_module.net, dm, "dev", self.batch_size, self.max_sentences)
        refs = bleu_lines(dm.splits["dev"].tgt_tokens[: len(hyps)], dm.tokenizers.get("tgt"))
        pl_module.log("val/bleu", corpus_bleu_tok(hyps, refs), prog_bar=True)
        if trainer.is_global_zero:
            rows = [(" ".join(dm.splits["dev"].src_tokens[i]), refs[i], hyps[i]) for i in range(min(self.samples, len(hyps)))]
            log_samples(trainer, "val/samples", ("source", "reference", "greedy"), rows, trainer.global_step)


class BeamBleuCallback(L.Callback):
    """Beam decoding, unk replacement and BLEU on the dev set every ``every_n_epochs`` epochs
    (``val/bleu_beam``, ``val/bleu_unk_beam``) and on every test set in ``trainer.test``
    (``test/<name>/bleu_beam``, ``test/<name>/bleu_unk_beam``).

    ``dictionary``: an optional ``src tgt [prob]`` file for unk replacement (spec §9).
    ``length_penalty``: None (raw scores, the paper), ``"avg"`` or a GNMT α, as in ``evaluate``.
    """

    def __init__(self, every_n_epochs: int = 1, beam_size: int = 5, batch_size: int = 64,
                 replace_unk: bool = True, dictionary: str | None = None,
                 max_sentences: int | None = None, length_penalty: float | str | None = None) -> None:
        self.every, self.batch_size, self.max_sentences = every_n_epochs, batch_size, max_sentences
        self.beam = BeamConfig(beam_size=beam_size, length_penalty=parse_length_penalty(length_penalty))
        self.replace_unk, self.dictionary_path = replace_unk, dictionary
        self._dictionary = None

    def _scores(self, pl_module, split) -> dict[str, float]:
        if self.dictionary_path and self._dictionary is None:
            self._dictionary = load_dictionary(self.dictionary_path)
        dm = pl_module.trainer.datamodule
        return split_bleu(pl_module.net, split, dm.tgt_vocab, self.beam, self.batch_size, self.max_sentences,
                          self.replace_unk, self._dictionary, dm.tokenizers.get("tgt"))

    def on_validation_epoch_end(self, trainer, pl_module) -> None:
        if not self.every or trainer.sanity_checking or (trainer.current_epoch + 1) % self.every:
            return
        for key, value in self._scores(pl_module, trainer.datamodule.splits["dev"]).items():
            pl_module.log(f"val/{key}_beam", value)

    def on_test_epoch_end(self, trainer, pl_module) -> None:
        for name in trainer.datamodule.test_spec:
            for key, value in self._scores(pl_module, trainer.datamodule.splits[name]).items():
                pl_module.log(f"test/{name}/{key}_beam", value, add_dataloader_idx=False)


def split_bleu(net, split, tgt_vocab, beam: BeamConfig | None = None, batch_size: int = 128,
               max_sentences: int | None = None, replace_unk: bool = False,
               dictionary: dict[str, str] | None = None, tokenizer=None) -> dict[str, float]:
    """Tokenised BLEU of a split's translations: ``bleu``, and ``bleu_unk`` after unk replacement.

    ``tokenizer``: the target tokeniser of training; sentencepiece pieces are joined into words.
    """
    was_training = net.training
    net.eval()
    src_ids = split.src_ids[:max_sentences]
    translations = decode_corpus(net, src_ids, batch_size, beam, keep_attention=replace_unk)
    net.train(was_training)
    refs = bleu_lines(split.tgt_tokens[: len(src_ids)], tokenizer)
    scores = {"bleu": corpus_bleu_tok(bleu_lines(output_words(translations, tgt_vocab), tokenizer), refs)}
    if replace_unk:
        words = output_words(translations, tgt_vocab, split.src_tokens, net.content_based, dictionary)
        scores["bleu_unk"] = corpus_bleu_tok(bleu_lines(words, tokenizer), refs)
    return scores


def translate_split(net, dm, split: str, batch_size: int = 128, max_sentences: int | None = None) -> list[str]:
    """Greedy translations of a split of a set-up datamodule, in the split's order."""
    was_training = net.training
    net.eval()
    translations = decode_corpus(net, dm.splits[split].src_ids[:max_sentences], batch_size)
    net.train(was_training)
    return bleu_lines(output_words(translations, dm.tgt_vocab), dm.tokenizers.get("tgt"))


def dev_bleu(net, dm, split: str = "dev", batch_size: int = 128, max_sentences: int | None = None) -> float:
    """Greedy tokenised BLEU of a split (the ``val/bleu`` of :class:`GreedyBleuCallback`)."""
    return split_bleu(net, dm.splits[split], dm.tgt_vocab, None, batch_size, max_sentences,
                      tokenizer=dm.tokenizers.get("tgt"))["bleu"]
