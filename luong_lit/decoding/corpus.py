"""Decode a whole corpus in length-sorted batches (greedy, beam or sampling), and post-process it.

Shared by the training callbacks and the ``translate``/``evaluate`` command-line tools.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence

import torch

from luong_lit.data.loading.batching import Batch, collate
from luong_lit.data.vocab import Vocab
from luong_lit.decoding.beam import beam_search, sync_every
from luong_lit.decoding.fixed import cuda_graph, fixed_beam_search
from luong_lit.decoding.greedy import greedy_decode
from luong_lit.decoding.prefix import Prefix
from luong_lit.decoding.sampling import generator, sample
from luong_lit.decoding.search import GREEDY, Hypothesis, Sampling, Search, beam_width
from luong_lit.decoding.unk import render
from luong_lit.decoding.workers import imap_workers
from luong_lit.nn.interface import DecodeModel, MemoryT, StateT

#: sentences decoded together where a caller gives no batch size, on any device but a CPU: a
#: test set in a few batches, for a step's host work is the same at any batch and a GPU's cores
#: are busy only with many rows (the CPU's own default is the caller's, ``cpu`` below); at
#: most :data:`DEVICE_ROWS` rows a step, so that a wider beam takes fewer sentences
DEVICE_BATCH, DEVICE_ROWS = 1000, 5000


def batch_size_for(
    device: torch.device | str, given: int | None = None, cpu: int = 64, beam: int = 1
) -> int:
    """The batch size to decode with on ``device`` at beam ``beam``: ``given`` where it is set,
    else ``cpu`` on a CPU (few rows pad little, and a host read costs nothing there) and
    elsewhere :data:`DEVICE_BATCH` sentences, or fewer where their ``beam`` rows each would be
    more than :data:`DEVICE_ROWS` (beam 12: 416)."""
    if given is not None:
        return given
    if torch.device(device).type == "cpu":
        return cpu
    return max(1, min(DEVICE_BATCH, DEVICE_ROWS // max(beam, 1)))


def batch_seed(seed: int, k: int) -> int:
    """The seed of batch ``k`` of a corpus sampled with ``seed``: each batch draws its own
    numbers, the same whichever process decodes it (``workers``)."""
    return (seed * 1_000_003 + k) % (1 << 63)


def corpus_seed(search: Search) -> int | None:
    """The seed a corpus is sampled with: ``search.seed``, else a fresh one; None to search."""
    if not isinstance(search, Sampling):
        return None
    if search.seed is not None:
        return search.seed
    return int(torch.randint(1 << 62, (), generator=generator(None, torch.device("cpu"))))


def _search_batch(
    model: DecodeModel[MemoryT, StateT], batch: Batch, search: Search, keep_attention: bool,
    prefix: Prefix | None, seed: int | None, graphs: bool = False,
) -> list[list[Hypothesis]]:  # fmt: skip
    """Each sentence's hypotheses, by the search ``search`` asks for."""
    if isinstance(search, Sampling):
        gen = generator(seed, batch.src.device)
        return sample(model, batch.src, batch.src_len, search, keep_attention, gen, prefix=prefix)
    if search.greedy:
        ids, attn = greedy_decode(
            model, batch.src, batch.src_len, search, return_attention=keep_attention,
            prefix=prefix,
        )  # fmt: skip
        return [[Hypothesis(h, None, attn[i] if attn else None)] for i, h in enumerate(ids)]
    search_beam = beam_for(batch.src.device, graphs)
    return search_beam(model, batch.src, batch.src_len, search, keep_attention, prefix=prefix)


def beam_for(device: torch.device, graphs: bool = False) -> Callable[..., list[list[Hypothesis]]]:
    """The beam search a device runs (both find the same, ``tests/test_decoding_fixed.py``): on
    a CPU the one that drops finished sentences from the batch (a host read costs nothing
    there, and fewer rows cost less); elsewhere the fixed-shape one, which reads the host once
    in :func:`~luong_lit.decoding.beam.sync_every` steps; ``graphs`` (a CUDA device): each
    chunk of those steps one CUDA graph, captured once a batch and replayed."""
    every = sync_every(device)
    if every == 1:
        return beam_search
    chunks = cuda_graph if graphs and device.type == "cuda" else None
    return functools.partial(fixed_beam_search, every=every, chunks=chunks)


def _decode_batch(
    model: DecodeModel[MemoryT, StateT], batch: Batch, search: Search, keep_attention: bool,
    prefix: Prefix | None = None, seed: int | None = None, graphs: bool = False,
) -> list[list[Hypothesis]]:  # fmt: skip
    found = _search_batch(model, batch, search, keep_attention, prefix, seed, graphs)
    for S, n_best in zip(batch.src_len.tolist(), found):  # one host read a batch
        for hyp in n_best:  # attention over the sentence's own S words (the batch pads the rest)
            hyp.attention = (
                hyp.attention[:, :S] if (keep_attention and hyp.attention is not None) else None
            )
    return found


@torch.no_grad()
def _decode_indices(
    item: tuple[int, list[int]],
    model: DecodeModel[MemoryT, StateT],
    src_ids: Sequence[Sequence[int]],
    search: Search,
    keep_attention: bool,
    device: torch.device,
    prefixes: Sequence[Sequence[int]] | None,
    seed: int | None,
    graphs: bool = False,
) -> list[tuple[int, list[Hypothesis]]]:
    k, idx = item
    batch = collate([(i, list(src_ids[i]), []) for i in idx]).to(device)
    order = batch.index.tolist()
    prefix = None if prefixes is None else Prefix.of([prefixes[i] for i in order], device)
    seed = None if seed is None else batch_seed(seed, k)
    found = _decode_batch(model, batch, search, keep_attention, prefix, seed, graphs)
    return list(zip(order, found))


@torch.no_grad()
def decode_corpus(
    model: DecodeModel[MemoryT, StateT],
    src_ids: Sequence[Sequence[int]],
    *,
    search: Search = GREEDY,
    batch_size: int | None = None,
    keep_attention: bool = False,
    progress: bool | Callable[[int], None] = False,
    workers: int = 1,
    prefixes: Sequence[Sequence[int]] | None = None,
    graphs: bool = False,
) -> list[list[Hypothesis]]:
    """Translate every source (a list of id lists) in input order: for each, its ``n_best``
    hypotheses, best first (greedy search: one; sampling: ``n_best`` samples); an empty
    source, none. ``prefixes``: target word ids each source's translations begin with
    (:mod:`luong_lit.decoding.prefix`; an empty list: none).

    Sentences are batched by source length (longest first) so that little padding is decoded.
    ``progress``: True draws a bar; a function is called with the number of sentences each batch
    decoded (a training run's progress lines, :func:`luong_lit.training.progress.decode_progress`).
    ``workers`` above 1 decodes the batches in that many forked processes
    (:mod:`luong_lit.decoding.workers`). Sampling seeds batch ``k`` with :func:`batch_seed` of
    ``search.seed`` (None: of a fresh seed), so that a seed reproduces the call. ``model``: a
    :class:`~luong_lit.nn.interface.DecodeModel` (a model, an ensemble, or an engine's
    decode-time form of either, :meth:`luong_lit.engines.FastEngine.for_decoding`).
    ``graphs``: beam search on a CUDA device runs each chunk of its steps as one CUDA graph
    (:func:`beam_for`).
    """
    out: list[list[Hypothesis]] = [[] for _ in src_ids]
    device = next(model.parameters()).device
    size = batch_size_for(device, batch_size, beam=beam_width(search))  # unset: the device's
    order = sorted((i for i, s in enumerate(src_ids) if len(s)), key=lambda i: -len(src_ids[i]))
    batches = list(enumerate(order[i : i + size] for i in range(0, len(order), size)))
    bar, tick = None, progress if callable(progress) else None
    if progress is True:
        from tqdm import tqdm

        bar = tqdm(total=len(order), unit="sent", desc="translating")
    for done in imap_workers(
        _decode_indices,
        batches,
        workers,
        model,
        src_ids,
        search,
        keep_attention,
        device,
        prefixes,
        corpus_seed(search),
        graphs,
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
    tgt_vocab: Vocab,
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
