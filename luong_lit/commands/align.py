"""Word alignments by forced decoding, and AER against gold links (paper §5.4, Table 6).

    python -m luong_lit align CKPT [CKPT ...] --rwth [--baselines] [--out DIR]
    python -m luong_lit align A.ckpt B.ckpt --rwth --member-conventions paper,predicted
    python -m luong_lit align CKPT --src F --tgt F [--gold F.talp [--gold-flip]] [--out DIR]

``--rwth`` uses the RWTH De–En gold set (``$LUONG_LIT_DATA/rwth_deen_alignment``, or
``--rwth-dir``) in the model's direction: an En→De model reads ``deen.tgt`` (English) as its
source and ``deen.src`` (German) as its target, and the gold links are flipped to match.

Token matching: the gold text is already tokenised, and each gold token is one model token,
lowercased and escaped as the model's training text was where its vocabulary has that form (a
lowercased Multi30k model reads "Haus" as "haus", "'s" as "&apos;s"). Tokens outside the model's
vocabulary are read as ``<unk>`` but keep their position, so every gold link stays scorable; the
report gives the share of tokens that were ``<unk>``. Links are written in Pharaoh ``i-j``
format (0-based source-target, original source order).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from luong_lit.checkpoint import run_directory
from luong_lit.cli import parser as make_parser
from luong_lit.cli import run_command
from luong_lit.data.io import read_lines
from luong_lit.data.loading.model_data import model_recipe
from luong_lit.data.sources.fetch import mirror_dir
from luong_lit.data.vocab import UNK_ID
from luong_lit.decoding.forced import attention_links, forced_attention, member_links
from luong_lit.decoding.unk import CONVENTIONS
from luong_lit.errors import CheckpointError, ConfigError, DataError
from luong_lit.metrics.aer import (
    aer,
    aer_by_length,
    diagonal_links,
    link_offsets,
    pharaoh,
    position_links,
    read_talp,
    tail_share,
)
from luong_lit.options import DecodeOptions
from luong_lit.translator import Translator


def rwth_files(root: Path | None, src_lang: str, tgt_lang: str) -> tuple[Path, Path, Path, bool]:
    """(source text, target text, gold, flip) for a model translating src_lang → tgt_lang."""
    if root is None:
        raise DataError("--rwth needs the RWTH data: set LUONG_LIT_DATA or pass --rwth-dir")
    d = root / "rwth_deen_alignment" if (root / "rwth_deen_alignment").is_dir() else root
    pair = (src_lang, tgt_lang)
    if pair == ("de", "en"):
        return d / "deen.src", d / "deen.tgt", d / "deen.talp", False
    if pair == ("en", "de"):
        return d / "deen.tgt", d / "deen.src", d / "deen.talp", True
    raise DataError(
        f"the RWTH gold set is German-English; this model translates {src_lang}->{tgt_lang}"
    )


def model_tokens(line: str, recipe, vocab) -> list[str]:
    """A gold line's tokens, each in the form the model's training text has where the
    vocabulary knows that form (lowercased, escaped), else as written."""
    out = []
    for word in line.split():
        form = recipe.token(word)
        out.append(form if form in vocab.stoi else word)
    return out


def model_links(model, src_vocab, tgt_vocab, src, tgt, conv=None) -> tuple[dict[str, list], float]:
    """Forced-decoding links under each alignment convention, and the share of tokens mapped
    to <unk> (one forward pass; the conventions differ only in which step's ``a_t`` is read).
    ``conv``: one convention per member instead, keyed ``per member: ...``
    (:func:`~luong_lit.decoding.forced.member_links`)."""
    members = list(getattr(model, "members", [model]))
    attends = all(m.has_attention for m in members) if conv else model.has_attention
    if not attends:
        raise CheckpointError("a model without attention has no alignments (attention=none)")
    src_ids = [src_vocab.encode(s) for s in src]
    tgt_ids = [tgt_vocab.encode(t) for t in tgt]
    ids = [i for s in src_ids + tgt_ids for i in s]
    unk = sum(i == UNK_ID for i in ids) / max(len(ids), 1)
    if conv:
        return {"per member: " + ",".join(conv): member_links(members, src_ids, tgt_ids, conv)}, unk
    att = forced_attention(model, src_ids, tgt_ids)
    lens = [len(t) for t in tgt]
    links = {c: attention_links(att, lens, model.content_based, c) for c in CONVENTIONS}
    return links, unk


def member_conventions(value: str, n: int) -> list[str]:
    """``--member-conventions``: one convention per checkpoint, comma-separated."""
    conv = [c.strip() for c in value.split(",")]
    if len(conv) != n or any(c not in CONVENTIONS for c in conv):
        raise ConfigError(
            f"--member-conventions {value!r}: give one of {', '.join(CONVENTIONS)} "
            f"for each of the {n} checkpoints, comma-separated"
        )
    return conv


def diagnostics(links: list, gold: list, src: list, tgt: list) -> dict:
    """AER by source length beside the diagonal's, the share of links on the last three source
    words beside the gold links' share (the signs of attention that collapses), and how far
    links lie from the gold ones (:func:`~luong_lit.metrics.aer.link_offsets`)."""
    src_lens = [len(s) for s in src]
    diag = [diagonal_links(len(s), len(t)) for s, t in zip(src, tgt)]
    rows = aer_by_length(links, gold, src_lens)
    for row, base in zip(rows, aer_by_length(diag, gold, src_lens)):
        row["diagonal"] = base["aer"]
    sure = [s for s, _ in gold]
    return {
        "aer_by_length": rows,
        "tail_share": {"model": tail_share(links, src_lens), "gold": tail_share(sure, src_lens)},
        "link_offsets": {"model": link_offsets(links, gold), "diagonal": link_offsets(diag, gold)},
    }


def baseline_links(src, tgt, extra_src=None, extra_tgt=None) -> dict[str, list]:
    """The diagonal aligner, the same blind to sentence lengths (target word ``j`` to source word
    ``j``), and eflomal trained on the same sentences (plus any extra text)."""
    from luong_lit.data.text.dictionary import eflomal_links

    out = {
        "diagonal": [diagonal_links(len(s), len(t)) for s, t in zip(src, tgt)],
        "diagonal, length-blind": [position_links(len(s), len(t)) for s, t in zip(src, tgt)],
    }
    try:
        links = eflomal_links(
            list(src) + list(extra_src or []), list(tgt) + list(extra_tgt or []), "intersect"
        )
        out["eflomal (intersection)"] = [set(x) for x in links[: len(src)]]
        fwd = eflomal_links(
            list(src) + list(extra_src or []), list(tgt) + list(extra_tgt or []), "forward"
        )
        out["eflomal (forward)"] = [set(x) for x in fwd[: len(src)]]
    except DataError as err:
        print(f"warning: {err}; eflomal baseline left out", file=sys.stderr)
    return out


def input_files(args, data: dict) -> tuple[Path, Path, Path | None, bool]:
    """(source text, target text, gold links or None, flip) from the options."""
    if args.rwth:
        root = Path(args.rwth_dir) if args.rwth_dir else mirror_dir(None)
        return rwth_files(root, data.get("src_lang"), data.get("tgt_lang"))
    if not (args.src and args.tgt):
        raise DataError("give --rwth, or both --src and --tgt")
    return Path(args.src), Path(args.tgt), args.gold, args.gold_flip


def run(args) -> dict:
    conv = None
    if args.member_conventions:
        if args.align_convention != "paper":
            raise ConfigError("give --align-convention or --member-conventions, not both")
        conv = member_conventions(args.member_conventions, len(args.checkpoints))
    tr = Translator.load(args.checkpoints, DecodeOptions(cli=True))
    model, src_vocab, tgt_vocab = tr.stepper, tr.src_vocab, tr.tgt_vocab  # the fast decode form
    src_path, tgt_path, gold_path, flip = input_files(args, tr.meta.get("data") or {})
    recipe = model_recipe(tr.meta)
    src = [model_tokens(x, recipe, src_vocab) for x in read_lines(src_path)]
    tgt = [model_tokens(x, recipe, tgt_vocab) for x in read_lines(tgt_path)]
    if len(src) != len(tgt):
        raise DataError(f"{src_path} has {len(src)} lines but {tgt_path} has {len(tgt)}")
    by_convention, unk = model_links(model, src_vocab, tgt_vocab, src, tgt, conv)
    convention = next(iter(by_convention)) if conv else args.align_convention
    links = by_convention[convention]
    report = {
        "checkpoints": [str(c) for c in args.checkpoints],
        "source": str(src_path),
        "target": str(tgt_path),
        "sentences": len(src),
        "unk_token_share": unk,
        "convention": convention,
        "links": [pharaoh(x) for x in links],
    }
    if gold_path:
        gold = read_talp(gold_path, flip=flip)
        by_aer = {c: aer(x, gold) for c, x in by_convention.items()}
        report.update(gold=str(gold_path), aer=by_aer[convention])
        report["aer_by_convention"] = by_aer
        report.update(diagnostics(links, gold, src, tgt))
        if args.baselines:
            extra = (
                [[x.split() for x in read_lines(p)] for p in (args.extra_src, args.extra_tgt)]
                if args.extra_src and args.extra_tgt
                else (None, None)
            )
            report["baselines"] = {
                name: aer(b, gold) for name, b in baseline_links(src, tgt, *extra).items()
            }
    return report


def parser() -> argparse.ArgumentParser:
    ap = make_parser("align", __doc__)
    ap.add_argument("checkpoints", nargs="+", help="one checkpoint, or several for an ensemble")
    ap.add_argument(
        "--rwth", action="store_true", help="the RWTH De-En gold set, in the model's direction"
    )
    ap.add_argument(
        "--rwth-dir", help="directory of deen.src/deen.tgt/deen.talp (default: $LUONG_LIT_DATA)"
    )
    ap.add_argument("--src", help="tokenised source sentences")
    ap.add_argument("--tgt", help="tokenised reference translations")
    ap.add_argument("--gold", help="gold links, talp format (1-based i-j sure, ipj possible)")
    ap.add_argument("--gold-flip", action="store_true", help="gold i indexes the target side")
    ap.add_argument(
        "--align-convention",
        default="paper",
        choices=CONVENTIONS,
        help="which links are written and give 'aer' (align.json scores both conventions, "
        "unless --member-conventions is given)",
    )
    ap.add_argument(
        "--member-conventions",
        metavar="CONV,...",
        help="read each checkpoint's attention under its own convention (paper or predicted, "
        "one per checkpoint) before the ensemble's rows are summed",
    )
    ap.add_argument(
        "--baselines", action="store_true", help="also score eflomal and a diagonal aligner"
    )
    ap.add_argument("--extra-src", help="more parallel text for the eflomal baseline (source side)")
    ap.add_argument("--extra-tgt", help="more parallel text for the eflomal baseline (target side)")
    ap.add_argument(
        "--out",
        help="directory for alignments.txt and align.json, or alignments_ensemble.txt and "
        "align_ensemble.json for several checkpoints (default: the first one's run directory)",
    )
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)

    def body() -> None:
        report = run(args)
        out = Path(args.out) if args.out else run_directory(args.checkpoints[0])
        out.mkdir(parents=True, exist_ok=True)
        suffix = "_ensemble" if len(args.checkpoints) > 1 else ""  # a member's own file stays
        (out / f"alignments{suffix}.txt").write_text(
            "".join(x + "\n" for x in report.pop("links")), encoding="utf-8"
        )
        (out / f"align{suffix}.json").write_text(json.dumps(report, indent=2), encoding="utf-8")
        print(json.dumps(report, indent=2))

    return run_command(body)


if __name__ == "__main__":
    sys.exit(main())
