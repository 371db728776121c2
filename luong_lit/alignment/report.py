"""Word alignments of a model by forced decoding, scored against gold links (paper §5.4,
Table 6): AER under both conventions of footnote 14, by source length beside a diagonal
aligner, and beside the baselines (the diagonal, eflomal).

Links are in Pharaoh ``i-j`` format (0-based source-target, original source order). The links
come from the translator (:meth:`luong_lit.translator.Translator.alignments`), the one place
the kit reads alignments from attention.
"""

from __future__ import annotations

import logging
from pathlib import Path

from luong_lit.alignment.gold import model_tokens
from luong_lit.data.io import DataError, read_lines
from luong_lit.data.loading.model_data import model_recipe
from luong_lit.data.vocab import UNK_ID
from luong_lit.decoding.unk import CONVENTIONS
from luong_lit.errors import CheckpointError, ConfigError
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

log = logging.getLogger(__name__)


def member_conventions(value: str, n: int) -> list[str]:
    """One convention per member of an ensemble of ``n``, from ``"paper,predicted"``."""
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
    from luong_lit.alignment.eflomal import eflomal_links

    out = {
        "diagonal": [diagonal_links(len(s), len(t)) for s, t in zip(src, tgt)],
        "diagonal, length-blind": [position_links(len(s), len(t)) for s, t in zip(src, tgt)],
    }
    both_src, both_tgt = list(src) + list(extra_src or []), list(tgt) + list(extra_tgt or [])
    try:
        for name, kind in (
            ("eflomal (intersection)", "intersect"),
            ("eflomal (forward)", "forward"),
        ):
            out[name] = [set(x) for x in eflomal_links(both_src, both_tgt, kind)[: len(src)]]
    except DataError as err:
        log.warning("%s; eflomal baseline left out", err)
    return out


def _read_pairs(translator, src_path: Path, tgt_path: Path) -> tuple[list, list]:
    recipe = model_recipe(translator.meta)
    src = [model_tokens(x, recipe, translator.src_vocab) for x in read_lines(src_path)]
    tgt = [model_tokens(x, recipe, translator.tgt_vocab) for x in read_lines(tgt_path)]
    if len(src) != len(tgt):
        raise DataError(f"{src_path} has {len(src)} lines but {tgt_path} has {len(tgt)}")
    return src, tgt


def _unk_share(translator, src, tgt) -> float:
    ids = [i for s in src for i in translator.src_vocab.encode(s)]
    ids += [i for t in tgt for i in translator.tgt_vocab.encode(t)]
    return sum(i == UNK_ID for i in ids) / max(len(ids), 1)


def _check_attention(translator, members) -> None:
    stepper = translator.inference.float_stepper
    nets = list(stepper.members) if members else [stepper]
    if not all(m.has_attention for m in nets):
        raise CheckpointError("a model without attention has no alignments (attention=none)")


#: sentences force-decoded between two updates of the progress bar: a multiple of the forced
#: pass's batch (32), so that the batches are those of one pass over all of them
CHUNK = 8 * 32


def _alignments(translator, src, tgt, members, progress: bool) -> dict[str, list]:
    """``translator.alignments`` of every pair, with a tqdm bar on standard error if asked."""
    from tqdm import tqdm

    found: dict[str, list] = {}
    with tqdm(total=len(src), unit="sent", desc="aligning", disable=not progress) as bar:
        for start in range(0, max(len(src), 1), CHUNK):  # no pairs: one call all the same
            part = slice(start, start + CHUNK)
            for key, links in translator.alignments(src[part], tgt[part], CONVENTIONS,
                                                    members).items():  # fmt: skip
                found.setdefault(key, []).extend(links)
            bar.update(len(src[part]))
    return found


def align_report(
    translator, src_path: Path, tgt_path: Path, gold_path: Path | None = None, *,
    flip: bool = False, convention: str = "paper", members: list[str] | None = None,
    baselines: bool = False, extra: tuple | None = None, progress: bool = False,
) -> dict:  # fmt: skip
    """The alignment report of ``translator`` on a tokenised parallel text: its links (under
    ``convention``, or one convention per ensemble member), the share of tokens read as
    ``<unk>``, and with ``gold_path`` (talp; ``flip``: its ``i`` indexes the target) the AER
    under every convention, its diagnostics and, with ``baselines``, the baselines' AER
    (``extra``: (source, target) token lists to train eflomal on besides). ``progress``: a
    progress bar of the forced decoding."""
    _check_attention(translator, members)
    src, tgt = _read_pairs(translator, src_path, tgt_path)
    by_convention = _alignments(translator, src, tgt, members, progress)
    chosen = next(iter(by_convention)) if members else convention
    links = by_convention[chosen]
    report = {
        "source": str(src_path), "target": str(tgt_path), "sentences": len(src),
        "unk_token_share": _unk_share(translator, src, tgt), "convention": chosen,
        "links": [pharaoh(x) for x in links],
    }  # fmt: skip
    if gold_path:
        gold = read_talp(gold_path, flip=flip)
        by_aer = {c: aer(x, gold) for c, x in by_convention.items()}
        report.update(gold=str(gold_path), aer=by_aer[chosen], aer_by_convention=by_aer)
        report.update(diagnostics(links, gold, src, tgt))
        if baselines:
            found = baseline_links(src, tgt, *(extra or (None, None)))
            report["baselines"] = {name: aer(b, gold) for name, b in found.items()}
    return report
