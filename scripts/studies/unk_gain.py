"""BLEU gain from unknown-word replacement on a test set, with three dictionaries.

    LUONG_LIT_DATA=MIRROR python -m scripts.studies.unk_gain RUN/checkpoints/best.ckpt \
        [--test newstest2014_filtered] [--beam 5] [--muse MIRROR/dict/muse/en-de.txt.gz]

Decodes once (beam search, attention kept), then scores the output before replacement, with
the aligned source word copied, translated through the MUSE dictionary, and translated
through a dictionary built here by eflomal from the model's own training corpus (pairs linked
at least ``--min-count`` times). Prints one JSON line; both BLEU kinds, case-sensitive.
"""

from __future__ import annotations

import argparse
import json

import torch

from luong_lit.alignment.eflomal import eflomal_links
from luong_lit.checkpoint import load_model
from luong_lit.data.loading.model_data import datamodule_for, load_split
from luong_lit.data.text.dictionary import dictionary_from_links, load_dictionary
from luong_lit.decoding.search import BeamSearch
from luong_lit.inference import Inference
from luong_lit.metrics.bleu import bleu_lines, corpus_bleu_detok, corpus_bleu_tok


def score(words, refs, lang: str) -> dict[str, float]:
    """Tokenised and detokenised BLEU (``evaluate``'s ``bleu_tok`` and ``bleu_detok``)."""
    text = bleu_lines(words)
    tok, detok = corpus_bleu_tok(text, refs), corpus_bleu_detok(text, refs, lang)
    return {"bleu_tok": tok, "bleu_detok": detok}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("checkpoint")
    ap.add_argument("--test", default="newstest2014_filtered")
    ap.add_argument("--beam", type=int, default=5)
    ap.add_argument("--muse", default=None)
    ap.add_argument("--min-count", type=int, default=5)
    args = ap.parse_args()
    torch.set_flush_denormal(True)
    net, src_vocab, tgt_vocab, meta = load_model(args.checkpoint)
    test = load_split(meta, args.test, src_vocab, tgt_vocab)
    split, lang = test.split, test.lang
    inference = Inference(net, tgt_vocab)
    beam = BeamSearch(beam=args.beam)
    out = inference.decode(split.src_ids, search=beam, batch_size=32, keep_attention=True)
    refs = [" ".join(t) for t in split.tgt_tokens]
    result = {"test": args.test, "beam": args.beam, "unk_in_output": 0}
    plain = inference.words(out)
    result["unk_in_output"] = sum(w.count("<unk>") for w in plain)
    result["none"] = score(plain, refs, lang)
    result["copy"] = score(inference.words(out, src_words=split.src_tokens), refs, lang)
    if args.muse:
        muse = load_dictionary(args.muse)
        replaced = inference.words(out, src_words=split.src_tokens, dictionary=muse)
        result["muse"] = score(replaced, refs, lang)
    train = datamodule_for(meta).read_train_split()  # length-filtered, tokenised
    links = eflomal_links(train.src_tokens, train.tgt_tokens)
    d = dictionary_from_links(train.src_tokens, train.tgt_tokens, links, args.min_count)
    result["eflomal_entries"] = len(d)
    result["eflomal"] = score(
        inference.words(out, src_words=split.src_tokens, dictionary=d), refs, lang
    )
    print(json.dumps(result))


if __name__ == "__main__":
    main()
