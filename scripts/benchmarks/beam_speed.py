"""Beam-search decoding speed of a trained checkpoint, batched against one sentence at a time.

    LUONG_LIT_DATA=MIRROR python -m scripts.benchmarks.beam_speed RUN/checkpoints/best.ckpt \
        [--test test_2016_flickr] [--beam 5] [--batch-size 30] [--single-limit 200] [--limit N]
        [--output FILE] [--engine fast|reference] [--int8 [output|all]] [--workers 1] [--authors]
        [--device cuda [--launches]] [--fixed]

Prints one JSON line: sentences per second of batched beam search over the whole test set,
of the same search one sentence at a time (on the first ``--single-limit`` sentences), their
ratio, the tokenised BLEU and mean length (words) of the batched output.
``--single-limit 0`` skips the one-at-a-time run. ``--authors`` searches with the authors'
rules (beam 12, docs/paper_notes.md §11) instead of ``--beam``; ``--device cuda`` decodes on
a GPU (the clock waits for it); ``--fixed`` runs the fixed-shape search (a host read in 8
steps) where the device would run the shrinking one (a CPU), to compare the two there. Both
runs use the same process, threads and search settings, back to back; each includes building
the engine's decode-time form.
``--launches`` (meant for a GPU; a CPU launches none) then profiles the search of the first
batch once more and adds its kernel launches (in all and per decoder step), host waits and the
share of its wall time the GPU ran kernels (:mod:`scripts.benchmarks.launches`): a small share means
the search is bound by launching kernels, as the training step with input feeding was.
"""

from __future__ import annotations

import argparse
import json
import time

from luong_lit.checkpoint import load_model
from luong_lit.data.loading.model_data import load_split
from luong_lit.decoding.corpus import decode_corpus, output_words
from luong_lit.decoding.search import AUTHORS, BeamSearch
from luong_lit.engines import ENGINES, make_engine
from luong_lit.metrics import corpus_bleu_tok
from luong_lit.runtime import configure_cpu


def launches_of_one_batch(stepper, src_ids, batch_size: int, cfg, tgt_vocab, graphs=False) -> dict:
    """The first batch's search, profiled (after one unprofiled run of it)."""
    import torch

    from scripts.benchmarks.launches import counts

    few = src_ids[:batch_size]
    decode_corpus(stepper, few, search=cfg, batch_size=batch_size, graphs=graphs)
    acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=acts) as prof:
        t0 = time.perf_counter()
        out = decode_corpus(stepper, few, search=cfg, batch_size=batch_size, graphs=graphs)
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        wall = time.perf_counter() - t0
    res = counts(prof, wall)
    steps = max(map(len, output_words(out, tgt_vocab))) + 1  # the longest output and its </s>
    res.update(decoder_steps=steps, kernel_launches_per_step=round(res["kernel_launches"] / steps))
    return {"launches": res}


def fixed_search(every: int) -> None:
    """Every beam search of ``decode_corpus`` the fixed-shape one, on any device."""
    import functools

    from luong_lit.decoding import corpus
    from luong_lit.decoding.fixed import fixed_beam_search

    search = functools.partial(fixed_beam_search, every=every, chunks=None)
    corpus.beam_for = lambda device, graphs=False: search


def search_name(device: str) -> str:
    """The beam search ``decode_corpus`` runs on ``device``: ``beam_search`` (shrinking) or
    ``fixed_beam_search``."""
    import torch

    from luong_lit.decoding import corpus

    found = corpus.beam_for(torch.device(device))
    return str(getattr(found, "func", found).__name__)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("checkpoint")
    ap.add_argument("--test", default="test_2016_flickr")
    ap.add_argument("--beam", type=int, default=5)
    ap.add_argument("--batch-size", type=int, default=30)
    ap.add_argument("--single-limit", type=int, default=200)
    ap.add_argument("--limit", type=int, default=0, help="decode only the first N sentences")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--workers", type=int, default=1, help="forked one-thread decoding processes")
    ap.add_argument("--output", help="also write the batched translations to this file")
    ap.add_argument("--authors", action="store_true", help="the authors' beam-12 rules")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--engine", default="fast", choices=tuple(ENGINES))
    ap.add_argument(
        "--int8",
        nargs="?",
        const="output",
        default=None,
        choices=("output", "all"),
        help="int8 output layer, or (all) every decoder product (luong_lit.nn.fast.quantize)",
    )
    ap.add_argument(
        "--launches", action="store_true", help="profile one batch's CUDA launches (none on a CPU)"
    )
    ap.add_argument(
        "--cuda-graphs",
        action="store_true",
        help="beam search's chunks of steps as CUDA graphs (a CUDA device)",
    )
    ap.add_argument("--fixed", action="store_true", help="the fixed-shape search on a CPU too")
    args = ap.parse_args()
    configure_cpu(args.threads)
    if args.fixed:
        if args.cuda_graphs:
            ap.error("--fixed runs the fixed-shape search without CUDA graphs: drop one of them")
        fixed_search(every=8)
    net, src_vocab, tgt_vocab, meta = load_model(args.checkpoint)
    split = load_split(meta, args.test, src_vocab, tgt_vocab).split
    src_ids, refs = split.src_ids, split.tgt_tokens
    if args.limit > 0:
        src_ids, refs = src_ids[: args.limit], refs[: args.limit]
    net = net.to(args.device)
    cfg = AUTHORS if args.authors else BeamSearch(beam=args.beam)
    engine = make_engine(args.engine)
    t0 = time.perf_counter()
    stepper = engine.for_decoding(net, args.int8)
    size, workers = args.batch_size, args.workers
    out = decode_corpus(
        stepper, src_ids, search=cfg, batch_size=size, workers=workers, graphs=args.cuda_graphs
    )
    batched = len(src_ids) / (time.perf_counter() - t0)
    words = output_words(out, tgt_vocab)
    hyps = [" ".join(w) for w in words]
    bleu = corpus_bleu_tok(hyps, [" ".join(t) for t in refs])
    res = {
        "test": args.test,
        "sentences": len(src_ids),
        "beam": "authors (12)" if args.authors else args.beam,
        "device": args.device,
        "engine": args.engine,
        "int8": args.int8,
        "workers": args.workers,
        "batch_size": args.batch_size,
        "cuda_graphs": args.cuda_graphs,
        "search": search_name(args.device),
        "batched_sent_per_s": round(batched, 1),
        "bleu_tok": round(bleu, 2),
        "mean_output_len": round(sum(map(len, words)) / len(words), 2),
    }
    if args.single_limit > 0:  # 0 skips the one-sentence-at-a-time run
        few = src_ids[: args.single_limit]
        t0 = time.perf_counter()
        decode_corpus(engine.for_decoding(net, args.int8), few, search=cfg, batch_size=1)
        single = len(few) / (time.perf_counter() - t0)
        res.update(
            single_sent_per_s=round(single, 1), batched_over_single=round(batched / single, 2)
        )
    if args.launches:
        res.update(
            launches_of_one_batch(
                stepper, src_ids, args.batch_size, cfg, tgt_vocab, args.cuda_graphs
            )
        )
    if args.output:
        with open(args.output, "w", encoding="utf-8") as f:
            f.writelines(h + "\n" for h in hyps)
    print(json.dumps(res))


if __name__ == "__main__":
    main()
