"""Decode a whole corpus in length-sorted batches (greedy or beam), and post-process it.

Shared by the training callbacks and the ``translate``/``evaluate`` command-line tools.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import torch

from luong_lit.data.loading.batching import collate
from luong_lit.decoding.beam import beam_search
from luong_lit.decoding.greedy import greedy_decode
from luong_lit.decoding.search import GREEDY, Hypothesis, Search
from luong_lit.decoding.unk import render
from luong_lit.decoding.workers import imap_workers


def _decode_batch(model, batch, search: Search, keep_attention: bool) -> list[list[Hypothesis]]:
    if search.greedy:
        ids, attn = greedy_decode(
            model, batch.src, batch.src_len, search, return_attention=keep_attention
        )
        return [[Hypothesis(h, None, attn[i] if attn else None)] for i, h in enumerate(ids)]
    found = beam_search(model, batch.src, batch.src_len, search, keep_attention)
    for b, n_best in enumerate(found):
        S = int(batch.src_len[b])
        for hyp in n_best:  # attention over the sentence's own S words (the batch pads the rest)
            hyp.attention = (
                hyp.attention[:, :S] if (keep_attention and hyp.attention is not None) else None
            )
    return found


@torch.no_grad()
def _decode_indices(
    idx: list[int],
    model,
    src_ids,
    search: Search,
    keep_attention: bool,
    device: torch.device,
) -> list[tuple[int, list[Hypothesis]]]:
    batch = collate([(i, list(src_ids[i]), []) for i in idx]).to(device)
    return list(zip(batch.index.tolist(), _decode_batch(model, batch, search, keep_attention)))


@torch.no_grad()
def decode_corpus(
    model,
    src_ids: Sequence[Sequence[int]],
    *,
    search: Search = GREEDY,
    batch_size: int = 64,
    keep_attention: bool = False,
    progress: bool | Callable[[int], None] = False,
    workers: int = 1,
) -> list[list[Hypothesis]]:
    """Translate every source (a list of id lists) in input order: for each, its ``n_best``
    hypotheses, best first (greedy search: one); an empty source, none.

    Sentences are batched by source length (longest first) so that little padding is decoded.
    ``progress``: True draws a bar; a function is called with the number of sentences each batch
    decoded (a training run's progress lines, :func:`luong_lit.training.progress.decode_progress`).
    ``workers`` above 1 decodes the batches in that many forked processes
    (:mod:`luong_lit.decoding.workers`). ``model``: a
    :class:`~luong_lit.nn.interface.DecodeModel` (a model, an ensemble, or an engine's
    decode-time form of either, :meth:`luong_lit.engines.FastEngine.for_decoding`).
    """
    out: list[list[Hypothesis]] = [[] for _ in src_ids]
    order = sorted((i for i, s in enumerate(src_ids) if len(s)), key=lambda i: -len(src_ids[i]))
    batches = [order[start : start + batch_size] for start in range(0, len(order), batch_size)]
    bar, tick = None, progress if callable(progress) else None
    if progress is True:
        from tqdm import tqdm

        bar = tqdm(total=len(order), unit="sent", desc="translating")
    device = next(model.parameters()).device
    for done in imap_workers(
        _decode_indices, batches, workers, model, src_ids, search, keep_attention, device
    ):
        for i, tr in done:
            out[i] = tr
        if bar is not None:
            bar.update(len(done))
        if tick is not None:
            tick(len(done))
    if bar is not None:
        bar.close()
    return out


def output_words(
    found: Sequence[Sequence[Hypothesis]],
    tgt_vocab,
    src_words: Sequence[Sequence[str]] | None = None,
    content_based: bool = True,
    dictionary: Mapping[str, str] | None = None,
    convention: str = "paper",
) -> list[list[str]]:
    """The words of each source's best hypothesis (:func:`~luong_lit.decoding.unk.render`):
    with ``src_words``, its ``<unk>`` words replaced; none for a source without one."""
    best = [hyps[0] if hyps else Hypothesis([]) for hyps in found]
    return [
        render(h.ids, tgt_vocab.itos, src_words[n] if src_words is not None else None,
               h.attention, content_based, dictionary, convention).words
        for n, h in enumerate(best)
    ]  # fmt: skip
