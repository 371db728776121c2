"""Callbacks: target-token throughput and greedy-decoding BLEU on the dev set."""
from __future__ import annotations

import time

import lightning as L
import torch

from luong_lit.data.batching import Batch
from luong_lit.decoding import greedy_decode
from luong_lit.metrics import corpus_bleu_tok


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

    def __init__(self, every_n_epochs: int = 1, batch_size: int = 128, max_sentences: int | None = None) -> None:
        self.every, self.batch_size, self.max_sentences = every_n_epochs, batch_size, max_sentences

    def on_validation_epoch_end(self, trainer, pl_module) -> None:
        if trainer.sanity_checking or (trainer.current_epoch + 1) % self.every:
            return
        dm = trainer.datamodule
        bleu = dev_bleu(pl_module.net, dm, "dev", self.batch_size, self.max_sentences)
        pl_module.log("val/bleu", bleu, prog_bar=True)


def translate_split(net, dm, split: str, batch_size: int = 128, max_sentences: int | None = None) -> list[str]:
    """Greedy translations of a split of a set-up datamodule, in the split's order."""
    from luong_lit.data.batching import BucketBatchSampler, collate

    examples = dm.splits[split].examples()[:max_sentences]
    sampler = BucketBatchSampler([len(e[1]) for e in examples], [len(e[1]) for e in examples],
                                 batch_size, shuffle=False)
    hyps = [""] * len(dm.splits[split].src_ids)
    was_training = net.training
    net.eval()
    device = next(net.parameters()).device
    with torch.no_grad():
        for idx in sampler:
            batch = collate([examples[i] for i in idx]).to(device)
            out, _ = greedy_decode(net, batch.src, batch.src_len)
            for i, ids in zip(batch.index.tolist(), out):
                hyps[i] = " ".join(dm.tgt_vocab.decode(ids))
    net.train(was_training)
    return hyps[:max_sentences]


def dev_bleu(net, dm, split: str = "dev", batch_size: int = 128, max_sentences: int | None = None) -> float:
    hyps = translate_split(net, dm, split, batch_size, max_sentences)
    refs = [" ".join(t) for t in dm.splits[split].tgt_tokens[: len(hyps)]]
    return corpus_bleu_tok(hyps, refs)
