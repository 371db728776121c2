"""Evaluate a checkpoint or an ensemble on a named test set, and write a report.

    python -m luong_lit.evaluate CKPT [CKPT ...] --test test_2016_flickr [--beam 5] [--dict FILE]

Reports perplexity, BLEU before and after unknown-word replacement (tokenised BLEU as
multi-bleu.perl computes it, and detokenised sacreBLEU 13a), BLEU by source length (Figure 6)
and sample translations in the style of Table 5, as Markdown and JSON in the run directory.
"""
from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path
from typing import Any, NamedTuple, Sequence

from luong_lit.checkpoint import CheckpointError, stored_tokenizers
from luong_lit.data.dictionary import load_dictionary
from luong_lit.data.io import DataError
from luong_lit.decoding.corpus import decode_corpus, output_words
from luong_lit.decoding.ensemble import EnsembleError
from luong_lit.metrics.bleu import bleu_lines, corpus_bleu_detok, corpus_bleu_tok
from luong_lit.metrics.buckets import bleu_by_length, markdown_table, plot_bleu_by_length
from luong_lit.metrics.perplexity import perplexity, stepwise_perplexity
from luong_lit.nn.quantize import float_weights
from luong_lit.runtime import configure_cpu
from luong_lit.translate import (UsageError, add_decoding_args, beam_config, check_beam_fits, check_options,
                                 load_for_decoding)

log = logging.getLogger("luong_lit.evaluate")


def datamodule_for(meta: dict, tests: dict | None = None, setup: bool = True):
    """The model's own dataset, tokenised as in training, with the given test sets."""
    from luong_lit.data.datamodule import TranslationDataModule

    cfg = {k: v for k, v in (meta.get("data") or {}).items() if not k.startswith("_")}
    cfg["mirror"] = None  # this machine's LUONG_LIT_DATA, not the training machine's
    cfg["test"] = dict(tests or {})
    try:
        dm = TranslationDataModule(**cfg)
    except DataError:
        raise
    except (TypeError, ValueError) as err:
        raise CheckpointError(f"the checkpoint's data description is damaged ({err})") from None
    if setup:
        dm.setup("test")
    return dm


class TestSet(NamedTuple):
    """A test split of a model's dataset, with what scoring it needs."""

    split: Any  # luong_lit.data.datamodule.Split
    lang: str  # the target language (for detokenisation)
    tokenizer: Any  # the target-side tokeniser of training
    raw_refs: list[str] | None  # untokenised references, where the data was tokenised here


def load_split(meta: dict, name: str, src_vocab, tgt_vocab) -> TestSet:
    """The test split ``name`` of the model's dataset, tokenised as in training and encoded with
    the model's vocabularies. The training data is not read (except for a sentencepiece model
    whose checkpoint does not keep its pieces model)."""
    data = meta.get("data") or {}
    dm = datamodule_for(meta, {name: dict(data.get("test") or {}).get(name, name)}, setup=False)
    dm.setup_test(src_vocab, tgt_vocab, stored_tokenizers(meta))
    split = dm.splits[name]
    lowercased = (data.get("tokenizer_opts") or {}).get("lowercase", False)
    raw = split.tgt_text if split.tgt_text and not lowercased else None
    return TestSet(split, data.get("tgt_lang", "de"), dm.tokenizers["tgt"], raw)


def load_train_split(meta: dict):
    """The model's training split (length-filtered, tokenised), e.g. to align it."""
    return datamodule_for(meta).splits["train"]


def score(hyps: list[list[str]], refs: list[str], lang: str, tokenizer=None,
          raw_refs: list[str] | None = None) -> dict[str, float]:
    """Tokenised and detokenised BLEU of output tokens against ``refs``, lines of the words
    BLEU counts (:func:`~luong_lit.metrics.bleu.bleu_lines`; sentencepiece output is joined into
    words first). ``raw_refs``, where given, are the references of the detokenised BLEU."""
    text = bleu_lines(hyps, tokenizer)
    detok = corpus_bleu_detok(text, raw_refs, lang, refs_detokenized=True) if raw_refs else \
        corpus_bleu_detok(text, refs, lang)
    return {"bleu_tok": corpus_bleu_tok(text, refs), "bleu_detok": detok}


def samples(split, plain, replaced, n: int) -> list[dict]:
    """Table 5 style: source, reference, and the output before and after unk replacement."""
    picked = [i for i, (a, b) in enumerate(zip(plain, replaced)) if a != b][:n]
    picked += [i for i in range(len(plain)) if i not in picked][: n - len(picked)]
    return [{"src": " ".join(split.src_tokens[i]), "ref": " ".join(split.tgt_tokens[i]),
             "best": " ".join(plain[i]), "best_unk_replaced": " ".join(replaced[i])} for i in sorted(picked)]


def evaluate(args) -> dict:
    model, src_vocab, tgt_vocab, metas = load_for_decoding(args)
    test = load_split(metas[0], args.test, src_vocab, tgt_vocab)
    split = test.split
    nets = list(getattr(model, "members", [model]))
    report = {"test": args.test, "checkpoints": [str(p) for p in args.checkpoints],
              "ppl": [perplexity(n, split.examples()) for n in nets]}
    if len(nets) > 1:  # the ensemble's own distribution (its combine rule), through its steps
        with float_weights(model):  # as the members' ppl: the float weights, even with --int8
            report["ppl_ensemble"] = stepwise_perplexity(model, split.examples())
    beam = beam_config(args)
    check_beam_fits(beam, tgt_vocab)
    out = decode_corpus(model, split.src_ids, args.batch_size, beam, keep_attention=True, progress=not args.quiet,
                        workers=args.workers)
    dictionary = load_dictionary(args.dict) if args.dict else None
    plain = output_words(out, tgt_vocab)
    replaced = output_words(out, tgt_vocab, split.src_tokens, model.content_based, dictionary,
                            args.align_convention)
    refs = bleu_lines(split.tgt_tokens, test.tokenizer)
    report["decoding"] = {"beam": args.beam, "authors_decoder": args.authors_decoder,
                          "length_penalty": args.length_penalty, "combine": args.combine,
                          "dictionary": args.dict, "align_convention": args.align_convention,
                          "int8": args.int8}
    report["bleu"] = score(plain, refs, test.lang, test.tokenizer, test.raw_refs)
    report["bleu_unk_replaced"] = score(replaced, refs, test.lang, test.tokenizer, test.raw_refs)
    report["detok_references"] = "raw" if test.raw_refs else "detokenised tokenised references"
    report["unk_in_output"] = sum(w.count("<unk>") for w in plain)
    report["length_buckets"] = bleu_by_length(bleu_lines(replaced, test.tokenizer), refs,
                                              [len(s) for s in split.src_tokens])
    report["samples"] = samples(split, plain, replaced, args.samples)
    return report


def markdown(report: dict) -> str:
    b, u = report["bleu"], report["bleu_unk_replaced"]
    lines = [f"# Evaluation on {report['test']}", "",
             "Checkpoints: " + ", ".join(f"`{Path(c).name}`" for c in report["checkpoints"]), "",
             f"Perplexity: {', '.join(f'{p:.2f}' for p in report['ppl'])}"
             + (f"; the ensemble: {report['ppl_ensemble']:.2f}" if "ppl_ensemble" in report else ""), "",
             f"Decoding: {json.dumps(report['decoding'])}", "",
             "| BLEU (case-sensitive) | before unk replacement | after |", "|---|---:|---:|",
             f"| tokenised (multi-bleu.perl equivalent, ##AT## rejoined) | {b['bleu_tok']:.2f} | {u['bleu_tok']:.2f} |",
             f"| detokenised sacreBLEU 13a (mteval-v13a stand-in) | {b['bleu_detok']:.2f} | {u['bleu_detok']:.2f} |",
             "", f"`<unk>` words in the output: {report['unk_in_output']}", "",
             "## BLEU by source length (Figure 6), after unk replacement", "",
             markdown_table(report["length_buckets"]), "", "## Sample translations (Table 5 style)", ""]
    for s in report["samples"]:
        lines += [f"- **src**: {s['src']}", f"  - **ref**: {s['ref']}", f"  - **best**: {s['best']}",
                  f"  - **best, unk replaced**: {s['best_unk_replaced']}"]
    return "\n".join(lines) + "\n"


def default_out_dir(checkpoint: str) -> Path:
    parent = Path(checkpoint).resolve().parent
    return parent.parent if parent.name == "checkpoints" else parent


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m luong_lit.evaluate", description=__doc__.split("\n")[0])
    add_decoding_args(ap)
    ap.add_argument("--test", required=True, help="test set name, e.g. test_2016_flickr or newstest2014_filtered")
    ap.add_argument("--out", help="directory for the report (default: the first checkpoint's run directory)")
    ap.add_argument("--samples", type=int, default=5, help="sample translations in the report")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s: %(message)s")
    configure_cpu(args.threads)
    try:
        check_options(args)  # bad options fail before the model and the test set are read
        report = evaluate(args)
    except (CheckpointError, DataError, EnsembleError, UsageError) as err:
        print(f"error: {err}", file=sys.stderr)
        sys.exit(2)
    out = Path(args.out) if args.out else default_out_dir(args.checkpoints[0])
    stem = f"eval_{args.test}" + ("_ensemble" if len(args.checkpoints) > 1 else "")
    out.mkdir(parents=True, exist_ok=True)
    plot_bleu_by_length({stem: report["length_buckets"]}, out / f"{stem}_bleu_by_length.png")
    (out / f"{stem}.json").write_text(json.dumps(report, indent=2), encoding="utf-8")
    (out / f"{stem}.md").write_text(markdown(report), encoding="utf-8")
    print(markdown(report))


if __name__ == "__main__":
    main()
