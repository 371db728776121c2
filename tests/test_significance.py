"""``luong_lit.metrics.significance`` (paired bootstrap on known outputs) and the ladder's steps
judged by it (``luong_lit.study.steps``): the seeds pooled pair by pair, the verdicts."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from luong_lit.analysis.cells import varying
from luong_lit.analysis.records import RunRow
from luong_lit.metrics.bleu import corpus_bleu_tok
from luong_lit.metrics.significance import Paired, paired_bootstrap, two_level_bootstrap
from luong_lit.metrics.verdicts import verdict
from luong_lit.study.rows import LadderRow
from luong_lit.study.steps import judged, step_test, verdict_cells


def corpus(seed: int, n: int = 200, right: float = 0.7, refs=None):
    """References of random words, and a system that gets a share ``right`` of them whole."""
    rng = random.Random(seed)
    words = "abcdefghijklmnop"
    refs = refs or [" ".join(rng.choice(words) for _ in range(10)) for _ in range(n)]
    hyps = [r if rng.random() < right else " ".join(rng.choice(words) for _ in range(10))
            for r in refs]  # fmt: skip
    return hyps, refs


def test_a_clearly_better_system_holds_and_the_same_step_backwards_is_reversed():
    bad, refs = corpus(1, right=0.3)
    good, _ = corpus(2, right=0.8, refs=refs)
    up, down = paired_bootstrap(bad, good, refs), paired_bootstrap(good, bad, refs)
    assert up.baseline == pytest.approx(corpus_bleu_tok(bad, refs))  # the tables' BLEU
    assert up.system == pytest.approx(corpus_bleu_tok(good, refs))
    assert up.gain > 20 and up.p < 0.01 and verdict(up) == "holds"
    assert down.gain == pytest.approx(-up.gain) and verdict(down) == "reversed"
    assert 0 < up.low < up.gain < up.high  # the gain's 95 % interval, mirrored backwards
    assert (down.low, down.high) == pytest.approx((-up.high, -up.low)) and down.p == up.p


def test_a_system_against_itself_or_a_near_twin_is_not_shown_to_differ():
    hyps, refs = corpus(3)
    same = paired_bootstrap(hyps, hyps, refs)
    assert same.gain == 0 and same.p == 1.0 and verdict(same) == "not shown"
    assert same.low == same.high == 0
    twin = list(hyps)
    twin[0] = "zz " + twin[0]  # one word more in one sentence of 200
    close = paired_bootstrap(hyps, twin, refs)
    assert abs(close.gain) < 0.5 and close.p > 0.05 and verdict(close) == "not shown"


def test_verdicts_follow_p_and_the_sign_of_the_gain():
    assert verdict(Paired(30.0, 31.0, 0.01, 100)) == "holds"
    assert verdict(Paired(30.0, 29.0, 0.049, 100)) == "reversed"
    assert verdict(Paired(30.0, 31.0, 0.05, 100)) == "not shown"
    with pytest.raises(ValueError, match="as many lines of each"):
        paired_bootstrap(["a"], ["a", "b"], ["a"])


def _run(tmp_path, name: str, hyp, ref, unk=None):
    """A run folder with an evaluate report and its output lines."""
    run = tmp_path / name
    run.mkdir()
    outputs = {"hyp": "eval_t.hyp", "ref": "eval_t.ref"}
    (run / "eval_t.hyp").write_text("\n".join(hyp) + "\n")
    (run / "eval_t.ref").write_text("\n".join(ref) + "\n")
    if unk is not None:
        (run / "eval_t.hyp_unk").write_text("\n".join(unk) + "\n")
        outputs["hyp_unk"] = "eval_t.hyp_unk"
    (run / "eval_t.json").write_text(json.dumps({"outputs": outputs}))
    return str(run)


def test_a_ladder_step_tests_every_seed_of_both_rows_and_holm_corrects_the_table(tmp_path):
    """Seeds 1 and 2 of the row above against seeds 1, 2 and 3 of the row (unpaired: every seed
    of each); the "+ unk" row pairs each run with itself decoded again."""
    base = {s: corpus(10 + s, right=0.3) for s in (1, 2)}
    refs = base[1][1]
    better = {s: corpus(20 + s, right=0.8, refs=refs)[0] for s in (1, 2, 3)}
    base = {s: corpus(10 + s, right=0.3, refs=refs)[0] for s in (1, 2)}

    def member(name, seed, hyp, unk=None):
        return RunRow(run=name, experiment="m30k_small", seed=seed,
                      path=_run(tmp_path, name, hyp, refs, unk))  # fmt: skip

    def ladder_row(**kw):
        return LadderRow(paper_row="row", paper_bleu=None, **kw)

    above = ladder_row(members=[member(f"a{s}", s, h) for s, h in base.items()])
    row = ladder_row(members=[member(f"b{s}", s, h, unk=h) for s, h in better.items()])
    found = step_test(above, row)
    assert (len(found.baseline.per_seed), len(found.system.per_seed)) == (2, 3)
    assert found.sentences == len(refs) and found.low > 0 and found.p < 0.01
    assert found.samples == 10_000 and found.p_error < 0.001
    # "+ unk" on outputs without <unk>: the same lines, no test, and not in Holm's family
    assert step_test(row, ladder_row(kind="unk", unk_of=row.members)) is None
    replaced = {s: h[:-1] + ["x"] for s, h in better.items()}  # one line changed a seed
    unk_row = ladder_row(members=[member(f"c{s}", s, better[s], unk=replaced[s]) for s in better])
    unk = step_test(unk_row, ladder_row(kind="unk", unk_of=unk_row.members))
    assert len(unk.system.per_seed) == 3 and unk.gain <= 0 and unk.p > 0.05
    laid = [above, row, ladder_row(kind="unk", unk_of=row.members)]
    steps = judged(laid)
    assert steps[0] is None and steps[1][2] == "holds" and steps[2] is None
    assert steps[1][1] == found.p  # Holm over one tested step: its own p
    two = judged([above, unk_row, ladder_row(kind="unk", unk_of=unk_row.members)])
    assert two[1][1] == min(1.0, 2 * min(two[1][0].p, two[2][0].p))  # the smaller, doubled
    gain, p, said = verdict_cells(steps[1])
    assert gain.startswith(f"{found.gain:+.2f} [") and "(2/3 seeds)" in gain and said == "holds"
    assert step_test(ladder_row(), row) is None and verdict_cells(None) == ("–", "–", "–")
    one = step_test(ladder_row(members=above.members[:1]), ladder_row(members=row.members[:1]))
    said = verdict_cells((one, one.p, "holds"))[2]  # one seed a side: these models only
    assert one.p < 0.05 and said.startswith("holds, these models only") and "seed" in said


def test_a_sweeps_cells_are_named_by_what_varies():
    cells = [
        "++trainer.max_steps=20 attention=global score=dot",
        "++trainer.max_steps=20 attention=local_p score=dot",
    ]
    assert varying(cells) == ["attention=global", "attention=local_p"]
    assert varying(["attention=global"]) == ["attention=global"]


def test_a_cell_named_by_its_overrides_says_what_model_it_is():
    """``ablation=global_general score=concat``: the cell keeps its name (what varies) and its
    row says the model the config resolved to, global (concat), not the ablation's name."""
    from luong_lit.analysis.cells import group, markdown_cells

    def run(ablation, attention, seed):
        cell = f"ablation={ablation} score=concat"
        return RunRow(run=cell, experiment="m30k_small", cell=cell, attention=attention,
                      score="concat", seed=seed, paper={})  # fmt: skip

    rows = [run("global_general", "global", 1), run("local_m_general", "local_m", 1)]
    table = markdown_cells(group(rows)).splitlines()
    assert table[0].startswith("| cell | system | runs |")
    assert table[2].startswith("| ablation=global_general | global (concat) | 1 |")
    assert table[3].startswith("| ablation=local_m_general | local_m (concat) | 1 |")


def test_overrides_that_do_not_change_the_model_do_not_make_a_cell(tmp_path):
    """A resumed run (``ckpt_path=last``) or one without its progress bar trains the same model:
    same cell; a recipe override (``model.net.init_state=copy``) is another cell."""
    from luong_lit.analysis.runs import cell_of

    def run(name, *overrides):
        (tmp_path / name / ".hydra").mkdir(parents=True)
        text = "".join(f"- {o}\n" for o in overrides)
        (tmp_path / name / ".hydra" / "overrides.yaml").write_text(text)
        return cell_of(tmp_path / name)

    plain = run("a", "ablation=local_m_general", "seed=1234")
    assert (
        run("b", "ablation=local_m_general", "callbacks.beam_bleu.on_test=false", "seed=2") == plain
    )
    assert run("c", "ablation=local_m_general", "ckpt_path=last", "threads=1") == plain
    assert run("d", "ablation=local_m_general", "model.net.init_state=copy") != plain
    # the hardware is not the recipe; the schedule and the precision are
    assert run("e", "ablation=local_m_general", "trainer=gpu", "trainer.devices=1") == plain
    assert run("h", "ablation=local_m_general", "trainer=ddp_4gpu") != plain  # 4x the batch
    assert run("i", "ablation=local_m_general", "trainer=gpu", "trainer.devices=4") != plain
    assert run("f", "ablation=local_m_general", "trainer.max_epochs=12") != plain
    assert run("g", "ablation=local_m_general", "trainer.precision=bf16-mixed") != plain


def test_the_paired_script_judges_run_folders_as_report_does_and_tests_over_seeds(tmp_path, capsys):
    """`scripts.studies.paired`: each pair's line is the bootstrap of the kept outputs, the last
    line the two-level test over the pairs' seeds (nothing pooled); a folder without outputs or
    an odd count is refused in one line."""
    from scripts.studies.paired import SAMPLES, labels, main, p_text

    bad, refs = corpus(31, right=0.3)
    good, _ = corpus(32, right=0.8, refs=refs)
    worse, _ = corpus(33, right=0.2, refs=refs)
    named = (("a", bad), ("b", good), ("c", bad), ("d", worse))
    runs = [_run(tmp_path, n, h, refs) for n, h in named]
    main(runs)
    lines = capsys.readouterr().out.splitlines()
    first = paired_bootstrap(bad, good, refs, SAMPLES)  # the script's 10,000 draws
    over_seeds = two_level_bootstrap([bad, bad], [good, worse], refs, SAMPLES)
    assert len(lines) == 3 and lines[0].startswith("a -> b: ")
    assert f"gain {first.gain:+.2f} [{first.low:+.2f}, {first.high:+.2f}]" in lines[0]
    assert lines[0].endswith("(two-sided)  holds  (200 sentences)")
    assert lines[2].startswith("over the 2 pairs' seeds and sentences (two-level): ")
    interval = f"[{over_seeds.low:+.2f}, {over_seeds.high:+.2f}]"
    assert f"gain {over_seeds.gain:+.2f} {interval}" in lines[2]
    assert p_text(over_seeds.p) in lines[2] and "pooled" not in "".join(lines)
    same_seed = (Path("r/paper_control/rev/seed1"), Path("r/paper/drop/seed1"))
    assert labels(*same_seed) == ("paper_control/rev/seed1", "paper/drop/seed1")
    with pytest.raises(SystemExit, match="no kept hyp_unk outputs"):
        main([runs[0], runs[1], "--unk"])
    with pytest.raises(SystemExit):
        main(runs[:3])


def test_the_paired_script_tests_a_replacement_against_the_same_models_lines_before_it(
    tmp_path, capsys
):
    """``--system-unk``: the baseline's lines before replacement against the system's after
    (a dictionary's replacement on one model); ``--unk``: both sides after it."""
    from scripts.studies.paired import SAMPLES, main

    before, refs = corpus(41, right=0.3)
    after, _ = corpus(42, right=0.7, refs=refs)
    run = _run(tmp_path, "m", before, refs)
    replaced = _run(tmp_path, "m_dict", before, refs, unk=after)
    main([run, replaced, "--system-unk"])
    main([replaced, replaced, "--unk"])
    lines = capsys.readouterr().out.splitlines()
    gain = paired_bootstrap(before, after, refs, SAMPLES)
    assert f"gain {gain.gain:+.2f} [{gain.low:+.2f}, {gain.high:+.2f}]" in lines[0]
    assert "gain +0.00 [+0.00, +0.00]" in lines[1]  # the same lines on both sides
    assert gain.p == 1 / (SAMPLES + 1) and "p 0.0001 (two-sided)" in lines[0]  # no draw as far


def test_report_reads_a_folder_of_kept_runs_and_its_table_is_well_formed(tmp_path):
    """``results/ladders/STUDY/ROW/seedS``: report finds the runs below the folder; every line of
    a ladder table has as many cells as its header."""
    from luong_lit.analysis.cells import run_dirs

    for row in ("table1_base", "table1_reverse"):
        run = tmp_path / "study" / row / "seed1"
        (run / ".hydra").mkdir(parents=True)
        (run / ".hydra" / "config.yaml").write_text("model: {net: {}}\\n")
    assert [p.parent.name for p in run_dirs([tmp_path / "study"])] == [
        "table1_base",
        "table1_reverse",
    ]
    from luong_lit.study.ladders import lay_out, markdown_ladder

    lines = [
        x
        for x in markdown_ladder("table1", lay_out([], "table1")).splitlines()
        if x.startswith("|")
    ]
    assert len({x.count("|") for x in lines}) == 1


def test_rows_trained_with_the_same_seeds_are_tested_seed_by_seed_when_asked(tmp_path):
    """``report --pair-seeds``: where both rows have runs of seeds 1, 2 and 3, seed i of one is
    paired with seed i of the other (the test of the per-seed differences); unasked, or where
    the seeds differ, every seed of each side as before."""
    from luong_lit.study.steps import SAMPLES

    refs = corpus(1, right=0.3)[1]
    base = {s: corpus(10 + s, right=0.4, refs=refs)[0] for s in (3, 1, 2)}
    better = {s: corpus(20 + s, right=0.6, refs=refs)[0] for s in (2, 3, 1)}

    def row(name, outputs):
        members = [
            RunRow(run=f"{name}{s}", experiment="m30k_small", seed=s,
                   path=_run(tmp_path, f"{name}{s}", h, refs))
            for s, h in outputs.items()
        ]  # fmt: skip
        return LadderRow(paper_row=name, paper_bleu=None, members=members)

    above, below = row("a", base), row("b", better)
    seeds = sorted(base)
    paired = step_test(above, below, pair_seeds=True)
    want = two_level_bootstrap([base[s] for s in seeds], [better[s] for s in seeds], refs,
                               SAMPLES, paired_seeds=True)  # fmt: skip
    assert paired == want
    unpaired = step_test(above, below)
    assert unpaired == two_level_bootstrap(
        list(base.values()), list(better.values()), refs, SAMPLES
    )
    assert paired.gain == pytest.approx(unpaired.gain) and paired.seed_se != unpaired.seed_se
    other = row("c", {4: better[1], 5: better[2], 6: better[3]})  # no seed shared: unpaired
    assert step_test(above, other, pair_seeds=True) == step_test(above, other)
