"""BLEU of raw text in, natural text out, and what each recasing choice is worth.

    python -m scripts.studies.raw_text CKPT --out DIR [--beam 5] [--replace-unk] [--src F --ref F]

Translates Multi30k's raw ``test_2016_flickr`` English with ``translate`` as a user would (raw
lines in, detokenised and recased German out) and scores it against the raw German references
with sacreBLEU 13a, cased and lowercased (an ``<unk>`` left in the output counts as one wrong
word, as in ``evaluate``; 13a alone would split it into three). The same translations as tokens
(``--pretokenized`` on the recipe's tokens) are then made text again with less of the recasing,
to show what each part gives: none (lowercase, detokenised), the first word capitalised, each
word's most frequent form in the cased training text, and that plus the source's casing for words
the table does not know (the kit's choice). The last must equal the end-to-end output:
``identical_lines`` counts the lines where it does.
"""

from __future__ import annotations

import argparse
import gzip
import json
import subprocess
import sys
from pathlib import Path

import sacrebleu

from luong_lit.checkpoint import read_meta
from luong_lit.data.loading.model_data import model_text
from luong_lit.data.sources.fetch import local_mirror
from luong_lit.data.text.recase import Recaser
from luong_lit.data.vocab import UNK
from luong_lit.metrics.bleu import UNK_DETOK

REPO = Path(__file__).resolve().parents[2]


def read(path: Path) -> list[str]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as fh:
        return fh.read().splitlines()


def translate(ckpt: str, lines: list[str], out: Path, extra: list[str]) -> list[str]:
    src = out.with_suffix(".in")
    src.write_text("\n".join(lines) + "\n", encoding="utf-8")
    cmd = [sys.executable, "-m", "luong_lit", "translate", ckpt, "-i", str(src), "-o", str(out)]
    subprocess.run(cmd + ["--quiet", *extra], check=True, cwd=REPO)
    return out.read_text(encoding="utf-8").splitlines()


def bleu(hyp: list[str], ref: list[str]) -> dict:
    """13a BLEU; an output ``<unk>`` counts as one wrong word (as in ``evaluate``)."""
    hyp = [h.replace(UNK, UNK_DETOK) for h in hyp]
    cased = sacrebleu.corpus_bleu(hyp, [ref], tokenize="13a").score
    lower = sacrebleu.corpus_bleu(hyp, [ref], tokenize="13a", lowercase=True).score
    return {"cased": round(cased, 2), "lowercased": round(lower, 2)}


def variants(tokens, cased_src, detok) -> dict[str, list[str]]:
    """The token output made text with each recasing choice."""
    table = detok.recaser or Recaser({})
    choices = {
        "none (lowercase)": lambda w, s: w,
        "first word capitalised": lambda w, s: Recaser({})(w),
        "frequency table": lambda w, s: table(w),
        "frequency table + source casing (the kit)": lambda w, s: table(w, s),
    }
    return {
        name: [
            detok.recipe.undo(f(w, s), detok.lang) if w else "" for w, s in zip(tokens, cased_src)
        ]
        for name, f in choices.items()
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("checkpoint")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--beam", type=int, default=5)
    ap.add_argument("--replace-unk", action="store_true")
    ap.add_argument("--src", type=Path, help="raw source (default: test_2016_flickr.en)")
    ap.add_argument("--ref", type=Path, help="raw reference (default: test_2016_flickr.de)")
    args = ap.parse_args(argv)
    if args.src is None or args.ref is None:  # the mirror only for the default test set
        raw = local_mirror("scripts.studies.raw_text") / "multi30k" / "raw"
    src = read(args.src or raw / "test_2016_flickr.en.gz")
    ref = read(args.ref or raw / "test_2016_flickr.de.gz")
    args.out.mkdir(parents=True, exist_ok=True)
    extra = ["--beam", str(args.beam)] + (["--replace-unk"] if args.replace_unk else [])
    natural = translate(args.checkpoint, src, args.out / "natural.de", extra)
    meta = read_meta(args.checkpoint)
    text = model_text(meta)  # a recipe's text: raw in, natural out
    tok, detok = text.source_tokenizer, text.detokenizer
    pre = [" ".join(tok.tokenize(x)) for x in src]
    tokens = translate(args.checkpoint, pre, args.out / "tokens.de", [*extra, "--pretokenized"])
    texts = variants([t.split() for t in tokens], [tok.cased(x) for x in src], detok)
    kit = texts["frequency table + source casing (the kit)"]
    same = sum(a == b for a, b in zip(kit, natural))
    print(json.dumps({"end_to_end": bleu(natural, ref), "identical_lines": same}))
    for name, hyp in texts.items():
        print(json.dumps({"recasing": name, **bleu(hyp, ref)}))


if __name__ == "__main__":
    from luong_lit.cli import run_command  # a missing mirror or bad input: one line, exit 2

    sys.exit(run_command(main))
