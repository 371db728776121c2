"""``luong_lit.study.exhibits``: Table 5 from two runs' kept outputs, Figure 7 from models and
the RWTH gold set."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from conftest import needs_mirror

from luong_lit.study.exhibits import figure7, gold_matrix, table5

V1 = Path(__file__).parent / "data" / "checkpoint_v1.ckpt"


def _run(root: Path, name: str, lines: dict[str, list[str]]) -> Path:
    run = root / name
    run.mkdir(parents=True)
    for kind, text in lines.items():
        (run / f"eval_t.{kind}").write_text("\n".join(text) + "\n")
    outputs = {kind: f"eval_t.{kind}" for kind in lines}
    (run / "eval_t.json").write_text(json.dumps({"outputs": outputs}))
    return run


def test_table5_shows_where_the_best_system_gains_most_and_where_it_loses(tmp_path):
    src = ["a b c d e f g h i j k l", "short one", "m n o p q r s t u v w x", "y " * 12]
    ref = ["w1 w2 w3 w4", "s1", "w5 w6 w7 w8", "w9 w10 w11 w12"]
    best = ["w1 w2 w3 w4", "s1", "x x x x", "w9 w10 w11 w12"]
    base = ["x x x x", "s1", "w5 w6 w7 w8", "w9 w10 w11 x"]
    b = _run(tmp_path, "best", {"src": src, "ref": ref, "hyp_unk": best})
    a = _run(tmp_path, "base", {"src": src, "ref": ref, "hyp_unk": base})
    text = table5(b, a, n=1)
    lines = text.splitlines()
    assert "| src (test line 1) | a b c d e f g h i j k l |" in lines  # the largest gain first
    assert lines.index("| src (test line 1) | a b c d e f g h i j k l |") < lines.index(
        "| src (test line 3) | m n o p q r s t u v w x |"
    )  # then the largest loss
    assert "short one" not in text  # under 12 source words
    assert "(best gains)" in text and "(best loses)" in text


def test_the_gold_picture_marks_sure_and_possible_links():
    picture = gold_matrix(({(0, 0)}, {(0, 0), (1, 2), (5, 5)}), n_src=3, n_tgt=3)
    assert picture[0, 0] == 1.0 and picture[2, 1] == 0.5 and picture.sum() == 1.5


@needs_mirror
def test_figure7_draws_each_model_beside_the_gold_alignment(tmp_path):
    from matplotlib.image import imread

    path = figure7({"global": V1, "the same again": V1}, tmp_path / "f7.png", index=3)
    height, width = imread(str(path)).shape[:2]
    assert width > 2 * height  # three panels side by side: two models and the gold one
    with pytest.raises(IndexError):
        figure7({"global": V1}, tmp_path / "x.png", index=10**6)
    assert np.isfinite(width)


def test_table5_pairs_the_last_rows_best_seed_with_the_base_of_that_seed(monkeypatch):
    """Whatever order the folders come in (a later seed's sweep numbers its job 0), Table 5
    takes the last row's run of highest BLEU and the base run of its seed."""
    from luong_lit.analysis import runs
    from luong_lit.study import ladder_views

    seed = {"best_s2": 2, "best_s1234": 1234, "base_s2": 2, "base_s1234": 1234}
    bleu = {"best_s2": 34.8, "best_s1234": 35.7, "base_s2": 7.0, "base_s1234": 7.7}
    from luong_lit.analysis.records import RunFacts, RunRow

    def facts(run):
        return RunFacts(run=Path(run).name, experiment="m30k_small", seed=seed[Path(run).name])

    def row(run):
        name = Path(run).name
        return RunRow(run=name, experiment="m30k_small", seed=seed[name], bleu_beam=bleu[name])

    monkeypatch.setattr(ladder_views, "describe", facts)
    monkeypatch.setattr(runs, "collect", row)
    best, base = ladder_views.best_and_base(
        [Path("best_s2"), Path("best_s1234")], [Path("base_s2"), Path("base_s1234")]
    )
    assert (best.name, base.name) == ("best_s1234", "base_s1234")
    bleu["best_s2"] = 36.0
    best, base = ladder_views.best_and_base(
        [Path("best_s2"), Path("best_s1234")], [Path("base_s1234")]
    )
    assert (best.name, base.name) == ("best_s2", "base_s1234")  # no base of seed 2: the first
