"""The paper's reported numbers (Tables 1, 3, 4 and 6), keyed the way runs are described.

Table 4 and Table 6 rows are keyed by ``(attention, score)``; Tables 1 and 3 by ladder (or
experiment) config name, in the paper's row order. Perplexities and tokenised BLEU on
newstest2014 (Tables 1, 4) or newstest2015 (Table 3); AER on the RWTH De–En gold set (Table 6).
Below the ladders' model rows, Tables 1 and 3 add rows decoded with unknown-word replacement
and (Table 1 only) an ensemble: :data:`TABLE1_AFTER`, :data:`TABLE3_AFTER`.
"""

from __future__ import annotations

TABLE1 = {  # WMT'14 En->De: (ppl, BLEU)
    "table1_base": ("Base", 10.6, 11.3),
    "table1_reverse": ("+ reverse", 9.9, 12.6),
    "table1_dropout": ("+ dropout", 8.1, 14.0),
    "table1_global_location": ("+ global attention (location)", 7.3, 16.8),
    "table1_feed_input": ("+ feed input", 6.4, 18.1),
    "table1_local_p_general": ("+ local-p (general) + feed input", 5.9, 19.0),
}
TABLE3 = {  # WMT'15 De->En: (ppl, BLEU)
    "table3_base_reverse": ("Base (reverse)", 14.3, 16.9),
    "table3_global_location": ("+ global (location)", 12.7, 19.1),
    "table3_feed_input": ("+ global (location) + feed", 10.9, 20.1),
    "table3_global_dot_dropout": ("+ global (dot) + drop + feed", 9.7, 22.8),
}
# the rows below each ladder's models: (row, BLEU); Table 3 has no ensemble row (the 25.9 of the
# paper's ensemble is Table 2's, En->De on newstest2015 in NIST BLEU)
TABLE1_AFTER = {
    "unk": ("+ unk replace", 20.9),
    "ensemble": ("Ensemble 8 models + unk replace", 23.0),
}
TABLE3_AFTER = {"unk": ("+ global (dot) + drop + feed + unk", 24.9)}
# each ladder: (table, section, its model rows, the rows below them, the paper's test set)
LADDERS = {
    "table1": ("1", "§4.2", TABLE1, TABLE1_AFTER, "WMT'14 En→De newstest2014"),
    "table3": ("3", "§4.3", TABLE3, TABLE3_AFTER, "WMT'15 De→En newstest2015"),
}
TABLE4 = {  # (attention, score): (ppl, BLEU, BLEU after unk replacement); None = not reported
    ("global", "location"): (6.4, 18.1, 19.3),
    ("global", "dot"): (6.1, 18.6, 20.5),
    ("global", "general"): (6.1, 17.3, 19.1),
    ("local_m", "dot"): (7.0, None, None),  # reported as "> 7.0"
    ("local_m", "general"): (6.2, 18.6, 20.4),
    ("local_p", "dot"): (6.6, 18.0, 19.6),
    ("local_p", "general"): (5.9, 19.0, 20.9),
    # concat: perplexities only, in the paper's footnote 15 ("did not yield good performances")
    ("global", "concat"): (6.7, None, None),
    ("local_m", "concat"): (7.1, None, None),
    ("local_p", "concat"): (7.1, None, None),
}
TABLE6 = {  # AER
    ("global", "location"): 0.39,
    ("local_m", "general"): 0.34,
    ("local_p", "general"): 0.36,
    "ensemble": 0.34,
    "berkeley aligner": 0.32,
}


PAPER_CORPUS = "wmt14_ende"  # Tables 1, 3 and 4: WMT'14 En->De (Table 3: WMT'15 De->En) text
CORPUS_NAMES = {"1": "WMT'14 En→De", "3": "WMT'15 De→En", "4": "WMT'14 En→De"}


def like_with_like(row: dict, dataset: str | None) -> dict:
    """The paper's row for a run trained on ``dataset``: as it is for the paper's corpus; for
    another corpus with its figures too, the row saying where they were measured, so that no
    one reads them as the same corpus's (Table 6's AER is on one gold set for every run)."""
    if not row or dataset == PAPER_CORPUS:
        return row
    where = CORPUS_NAMES.get(row["table"], "the paper's corpus")
    return {**row, "row": f"{row['row']} (measured on {where}; this run: {dataset})"}


def paper_row(experiment: str | None, attention: str | None, score: str | None) -> dict:
    """The paper's figures for a run: by experiment name first, else by attention × score."""
    bleu: float | None  # Table 4 leaves some BLEU unreported
    if experiment in TABLE1:
        name, ppl, bleu = TABLE1[experiment]
        return {"table": "1", "row": name, "ppl": ppl, "bleu": bleu}
    if experiment in TABLE3:
        name, ppl, bleu = TABLE3[experiment]
        return {"table": "3", "row": name, "ppl": ppl, "bleu": bleu}
    key = (attention, score)
    if key in TABLE4:
        ppl, bleu, unk = TABLE4[key]
        row = {
            "table": "4",
            "row": f"{attention} ({score})",
            "ppl": ppl,
            "bleu": bleu,
            "bleu_unk": unk,
        }
        if key in TABLE6:
            row["aer"] = TABLE6[key]
        return row
    return {}
