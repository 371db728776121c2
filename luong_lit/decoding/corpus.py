"""Decode a whole corpus in length-sorted batches (greedy or beam), and post-process it.

Shared by the training callbacks and the ``translate``/``evaluate`` command-line tools.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import torch
from torch import Tensor

from luong_lit.data.loading.batching import collate
from luong_lit.data.vocab import BOS, PAD, UNK
from luong_lit.decoding.beam import BeamConfig, Hypothesis, beam_search
from luong_lit.decoding.greedy import greedy_decode
from luong_lit.decoding.unk import replace_in_hypothesis
from luong_lit.decoding.workers import imap_workers


@dataclass
class Translation:
    """The best output for one source sentence; ``n_best`` holds the rest for beam search."""

    ids: list[int]
    attention: Tensor | None = None  # (len + 1, S) weights of every step, </s> included
    score: float | None = None
    n_best: list[Hypothesis] = field(default_factory=list)


def is_greedy(beam: BeamConfig | None) -> bool:
    """Whether ``beam`` asks for nothing beyond greedy search (beam size 1 equals greedy)."""
    return beam is None or (
        beam.beam_size == 1
        and beam.n_best == 1
        and beam.length_penalty is None
        and beam.stack_size is None
    )


def _decode_batch(model, batch, beam: BeamConfig | None, keep_attention: bool) -> list[Translation]:
    if is_greedy(beam):
        keys = ("max_len_ratio", "max_len_extra", "min_len_ratio", "src_len_plus")
        limits = {} if beam is None else {k: getattr(beam, k) for k in keys}
        hyps, attn = greedy_decode(
            model, batch.src, batch.src_len, return_attention=keep_attention, **limits
        )
        return [Translation(h, attn[i] if attn else None) for i, h in enumerate(hyps)]
    out = []
    for b, n_best in enumerate(beam_search(model, batch.src, batch.src_len, beam, keep_attention)):
        S = int(batch.src_len[b])
        for hyp in n_best:  # attention over the sentence's own S words (the batch pads the rest)
            hyp.attention = (
                hyp.attention[:, :S] if (keep_attention and hyp.attention is not None) else None
            )
        best = n_best[0]
        out.append(Translation(best.tokens, best.attention, best.score, n_best))
    return out


@torch.no_grad()
def _decode_indices(
    idx: list[int],
    model,
    src_ids,
    beam: BeamConfig | None,
    keep_attention: bool,
    device: torch.device,
) -> list[tuple[int, Translation]]:
    batch = collate([(i, list(src_ids[i]), []) for i in idx]).to(device)
    return list(zip(batch.index.tolist(), _decode_batch(model, batch, beam, keep_attention)))


@torch.no_grad()
def decode_corpus(
    model,
    src_ids: Sequence[Sequence[int]],
    batch_size: int = 64,
    beam: BeamConfig | None = None,
    keep_attention: bool = False,
    progress: bool = False,
    workers: int = 1,
) -> list[Translation]:
    """Translate every source (a list of id lists) in input order; empty sources give empty output.

    Sentences are batched by source length (longest first) so that little padding is decoded.
    ``workers`` above 1 decodes the batches in that many forked processes
    (:mod:`luong_lit.decoding.workers`). ``model`` is anything with ``encode`` and ``step``:
    a model, an ensemble, or an engine's decode-time form of either
    (:meth:`luong_lit.engines.FastEngine.for_decoding`).
    """
    out: list[Translation] = [Translation([]) for _ in src_ids]
    order = sorted((i for i, s in enumerate(src_ids) if len(s)), key=lambda i: -len(src_ids[i]))
    batches = [order[start : start + batch_size] for start in range(0, len(order), batch_size)]
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=len(order), unit="sent", desc="translating")
    device = next(model.parameters()).device
    for done in imap_workers(
        _decode_indices, batches, workers, model, src_ids, beam, keep_attention, device
    ):
        for i, tr in done:
            out[i] = tr
        if bar is not None:
            bar.update(len(done))
    if bar is not None:
        bar.close()
    return out


def output_words(
    translations: Sequence[Translation],
    tgt_vocab,
    src_words: Sequence[Sequence[str]] | None = None,
    content_based: bool = True,
    dictionary: Mapping[str, str] | None = None,
    convention: str = "paper",
) -> list[list[str]]:
    """Target words of each translation; with ``src_words``, ``<unk>`` words are replaced.

    Replacement works on the raw output, one word per step, so that each word keeps its own
    attention vector; stray ``<s>``/``<pad>`` symbols are dropped afterwards.
    """
    out = []
    for n, t in enumerate(translations):
        words = [tgt_vocab.itos[i] for i in t.ids]
        if src_words is not None:
            words = replace_in_hypothesis(
                words, src_words[n], t.attention, content_based, dictionary, convention, UNK
            )
        out.append([w for w in words if w not in (PAD, BOS)])
    return out
