"""chrF, chrF++ and TER beside BLEU: the kit's scores are ``python -m sacrebleu``'s on the same
lines, with the same signatures; validation logs them, ``results.json`` and ``evaluate`` keep
them, the paired test resamples chrF, and ``report`` still reads runs written without them."""

from __future__ import annotations

import csv
import io
import json
import random
import subprocess
import sys

import pytest
import yaml
from conftest import run_here

from luong_lit.metrics.bleu import rejoin_hyphens
from luong_lit.metrics.chrf_ter import corpus_chrf_ter, words_scores
from luong_lit.metrics.signatures import signature

HYPS = [
    "the cat sat on a mat .",
    "A dog ##AT##-##AT## like animal runs .",
    "",
    "two men are playing football in the park",
    "eine Frau mit einem roten Hut .",
]
REFS = [
    "the cat sat on the mat .",
    "a dog ##AT##-##AT## like animal is running .",
    "a child .",
    "two men play soccer in a park .",
    "eine Frau mit rotem Hut .",
]


def sacrebleu_cli(ref, hyp, *metric_args: str) -> list[dict]:
    """``python -m sacrebleu REF -i HYP -w 6 ARGS``: its JSON, one entry a metric."""
    cmd = [sys.executable, "-m", "sacrebleu", str(ref), "-i", str(hyp), "-w", "6", *metric_args]
    res = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=120)
    found = json.loads(res.stdout)
    return found if isinstance(found, list) else [found]


def write_lines(path, lines) -> None:
    path.write_text("".join(x + "\n" for x in lines), encoding="utf-8")


def cli_scores(ref, hyp) -> dict[str, dict]:
    """chrF, chrF++ and TER of the files as sacreBLEU's command line gives them."""
    plus, ter = sacrebleu_cli(ref, hyp, "-m", "chrf", "ter", "--chrf-word-order", "2")
    (plain,) = sacrebleu_cli(ref, hyp, "-m", "chrf")
    return {"chrf": plain, "chrfpp": plus, "ter": ter}


def test_chrf_chrfpp_and_ter_are_sacrebleus_command_line_on_the_lines_bleu_reads(tmp_path):
    """The files hold what BLEU reads (``##AT##-##AT##`` rejoined); the kit's scores and
    signatures are the command line's on them."""
    ref, hyp = tmp_path / "ref.txt", tmp_path / "hyp.txt"
    write_lines(ref, map(rejoin_hyphens, REFS))
    write_lines(hyp, map(rejoin_hyphens, HYPS))
    cli = cli_scores(ref, hyp)
    ours = corpus_chrf_ter(HYPS, REFS)
    assert [cli[k]["name"] for k in ("chrf", "chrfpp", "ter")] == ["chrF2", "chrF2++", "TER"]
    for name, found in cli.items():
        assert ours[name] == pytest.approx(found["score"], abs=1e-5), name
        assert signature(name) == found["signature"], name
    scores = words_scores({"greedy": [h.split() for h in HYPS]}, [r.split() for r in REFS])
    assert {k: scores[f"{k}_greedy"] for k in ours} == ours and "chrf_beam_unk" not in scores
    assert 0 < ours["chrf"] < 100 and ours["ter"] > 0


def test_validation_and_results_json_carry_chrf_and_ter(trained):
    out, _, metrics = trained
    assert 0.0 <= metrics["val/chrf"] <= 100.0 and 0.0 <= metrics["val/chrfpp"] <= 100.0
    assert metrics["val/ter"] >= 0.0  # edits per reference word: past 100 for long outputs
    with open(out / "csv" / "metrics.csv", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    logged = [r for r in rows if r.get("val/bleu")]
    assert logged and all(r["val/chrf"] and r["val/ter"] and r["val/chrfpp"] for r in logged)
    results = json.loads((out / "results.json").read_text())
    toy = results["toy"]
    for key in ("chrf_greedy", "chrfpp_greedy", "ter_greedy", "chrf_beam", "ter_beam",
                "chrf_beam_unk", "ter_beam_unk"):  # fmt: skip
        assert isinstance(toy[key], float), key
    assert results["chrf_signature"] == signature("chrf")
    assert results["ter_signature"] == signature("ter")
    assert results["bleu_signature"] == signature("bleu_tok")


def test_evaluates_report_has_chrf_and_ter_with_signatures(trained, tmp_path):
    out, _, _ = trained
    res = run_here(["evaluate", str(out / "checkpoints" / "best.ckpt"), "--test", "toy",
                    "--beam", "2", "--out", str(tmp_path), "--quiet"])  # fmt: skip
    assert res.returncode == 0, res.stderr.decode()
    report = json.loads((tmp_path / "eval_toy.json").read_text())
    cli = cli_scores(tmp_path / "eval_toy.ref", tmp_path / "eval_toy.hyp")
    for name, found in cli.items():
        assert report["beam"][f"{name}_tok"] == pytest.approx(found["score"], abs=1e-5)
        for kind in ("tok", "detok"):
            assert report["signatures"][f"{name}_{kind}"] == found["signature"]
            assert f"{name}_{kind}" in report["beam_unk"]
    assert report["signatures"]["bleu_detok"] == signature("bleu_detok")
    md = (tmp_path / "eval_toy.md").read_text()
    assert "| chrF++, detokenised |" in md and f"`{signature('ter')}`" in md


def test_the_paired_test_on_chrf_is_two_sided_as_a_permutation_test_is():
    """A system better on 333 sentences and worse on 292 of 700: the paired bootstrap of chrF
    gives the p of sacreBLEU's approximate randomization (a two-sided permutation test) within
    Monte Carlo error (2,000 draws each: sd ~ 0.006 at p ~ 0.07)."""
    from sacrebleu.metrics import CHRF
    from sacrebleu.significance import PairedTest

    from luong_lit.metrics.significance import paired_bootstrap, two_level_bootstrap

    rng = random.Random(0)
    refs = [[f"w{rng.randrange(10**6)}" for _ in range(12)] for _ in range(700)]
    base = [[*r[:2], f"x{i}", *r[3:]] for i, r in enumerate(refs)]
    system = [list(b) for b in base]
    order = random.Random(1).sample(range(700), 625)
    for i in order[:333]:
        system[i][2] = refs[i][2]
    for i in order[333:]:
        system[i][9] = f"y{i}"
    base, system, refs = ([" ".join(w) for w in x] for x in (base, system, refs))
    ours = paired_bootstrap(base, system, refs, n_samples=2000, metric="chrf")
    test = PairedTest([("baseline", base), ("system", system)], {"chrF": CHRF()}, [refs],
                      test_type="ar", n_samples=2000)  # fmt: skip
    reference = float(test()[1]["chrF2"][1].p_value)
    assert 0.02 < reference < 0.2
    assert ours.p == pytest.approx(reference, abs=0.03)
    assert ours.baseline == pytest.approx(CHRF().corpus_score(base, [refs]).score)
    assert ours.system == pytest.approx(CHRF().corpus_score(system, [refs]).score)
    few = [x[:50] for x in (base, system, refs)]
    two = two_level_bootstrap([few[0]], [few[1]], few[2], n_samples=20, metric="chrfpp")
    assert two.system.bleu == pytest.approx(CHRF(word_order=2).corpus_score(few[1], [few[2]]).score)
    with pytest.raises(ValueError, match="no paired test of 'ter'"):
        paired_bootstrap(base, system, refs, metric="ter")


def fake_run(run, attention: str, results: dict, evaluated: dict | None = None):
    """A run directory as far as ``report`` reads it: config, overrides, results (and a report
    of ``evaluate`` with the ``bleu`` and ``bleu_unk_replaced`` scores given)."""
    net = {"attention": {"name": attention}, "score": {"name": "general"}}
    cfg = {"seed": 1, "model": {"net": net}, "data": {"dataset": "files"}}
    (run / ".hydra").mkdir(parents=True)
    (run / ".hydra" / "config.yaml").write_text(yaml.safe_dump(cfg))
    (run / ".hydra" / "overrides.yaml").write_text(yaml.safe_dump([f"attention={attention}"]))
    (run / "results.json").write_text(json.dumps({"checkpoint": "best.ckpt", "test": results}))
    if evaluated:
        ev = {"decoding": {"beam": 5}, **evaluated}
        (run / "eval_test.json").write_text(json.dumps(ev))


def test_report_shows_chrf_and_ter_and_still_reads_runs_written_without_them(tmp_path):
    sweep = tmp_path / "sweep"
    old = {"ppl": 9.0, "bleu_greedy": 20.0, "bleu_beam": 21.0, "bleu_unk_beam": 22.0}
    fake_run(sweep / "0_job", "global", old,
             {"bleu": {"bleu_tok": 23.0}, "bleu_unk_replaced": {"bleu_tok": 24.0}})  # fmt: skip
    new = {"ppl": 8.0, "bleu_greedy": 25.0, "chrf_greedy": 51.5, "ter_greedy": 60.25}
    fake_run(sweep / "1_job", "local_p", new,
             {"bleu": {"bleu_tok": 26.0, "chrf_tok": 53.5, "ter_tok": 58.0},
              "bleu_unk_replaced": {"bleu_tok": 27.0, "chrf_tok": 54.5}})  # fmt: skip
    res = run_here(["report", str(sweep), "--csv", str(tmp_path / "t.csv")])
    assert res.returncode == 0, res.stderr.decode()
    lines = res.stdout.decode().splitlines()
    head = [c.strip() for c in lines[0].strip("|").split("|")]
    rows = {r[0]: r for r in ([c.strip() for c in x.strip("|").split("|")] for x in lines[2:])}
    got = {k: dict(zip(head, rows[k], strict=True)) for k in ("attention=global",
                                                              "attention=local_p")}  # fmt: skip
    old_row, new_row = got["attention=global"], got["attention=local_p"]
    assert old_row["beam BLEU"] == "23.00"  # from its evaluate report, which has no chrF
    assert (old_row["greedy chrF"], old_row["beam chrF"], old_row["beam TER"]) == ("–", "–", "–")
    assert (new_row["greedy chrF"], new_row["greedy TER"]) == ("51.50", "60.25")
    assert (new_row["beam chrF"], new_row["+ unk chrF"], new_row["beam TER"]) == (
        "53.50", "54.50", "58.00")  # fmt: skip
    assert new_row["+ unk TER"] == "–"  # a report that has no such score
    table = list(csv.DictReader(io.StringIO((tmp_path / "t.csv").read_text())))
    assert [r["chrf_greedy_mean"] for r in table] == ["", "51.5000"]
    per_run = run_here(["report", str(sweep / "0_job"), str(sweep / "1_job")])
    assert per_run.returncode == 0 and "| greedy chrF |" in per_run.stdout.decode()


def test_chrf_read_from_chrfpps_statistics_is_sacrebleus_chrf_to_the_last_digit():
    """A property over random lines (empty ones, one line, punctuation, casing): the one pass
    gives exactly what sacreBLEU's ``corpus_score`` gives for each score, alone or together."""
    from sacrebleu.metrics import CHRF, TER

    rng = random.Random(0)
    words = ["Ein", "ein", "Hund", "läuft", ".", ",", "im", "Park", "##AT##-##AT##", "a", ""]
    for _ in range(30):
        n = rng.randint(1, 12)
        line = lambda: " ".join(rng.choice(words) for _ in range(rng.randint(0, 9))).strip()  # noqa: E731
        hyps, refs = [line() for _ in range(n)], [line() or "x" for _ in range(n)]
        got = corpus_chrf_ter(hyps, refs, rejoin=False)
        assert got == {"chrf": CHRF().corpus_score(hyps, [refs]).score,
                       "chrfpp": CHRF(word_order=2).corpus_score(hyps, [refs]).score,
                       "ter": TER().corpus_score(hyps, [refs]).score}  # fmt: skip
        for names in (["ter"], ["chrf"], ["chrfpp", "chrf"], []):
            alone = corpus_chrf_ter(hyps, refs, rejoin=False, names=names)
            assert alone == {k: got[k] for k in names} and list(alone) == names


def test_dev_scores_choose_what_a_validation_logs_beside_bleu(toy_corpus, tmp_path):
    from conftest import compose_cfg, tiny_overrides

    from luong_lit.training.run import train

    overrides = [*tiny_overrides(toy_corpus), "trainer.max_epochs=1", "logger=csv",
                 "test_after_training=false", "callbacks.greedy_bleu.dev_scores=[ter]"]  # fmt: skip
    train(compose_cfg(overrides, tmp_path))
    with next(tmp_path.glob("**/metrics.csv")).open() as f:
        rows = [r for r in csv.DictReader(f) if r.get("val/bleu")]
        columns = set(rows[0])
    assert rows and rows[-1]["val/ter"] and {"val/chrf", "val/chrfpp"}.isdisjoint(columns)


@pytest.mark.parametrize(
    "extra,says",
    [
        (["select_by=chrf", "callbacks.greedy_bleu.dev_scores=[ter]"], "add chrf to it"),
        (["callbacks.greedy_bleu.dev_scores=[bleu]"], "dev_scores='bleu' is unknown"),
        (
            [
                "schedule=plateau",
                "model.scheduler.monitor=val/ter",
                "model.scheduler.mode=min",
                "callbacks.greedy_bleu.dev_scores=[chrf]",
            ],
            "model.scheduler.monitor=ter reads",
        ),
        (["callbacks.greedy_bleu.dev_scores=ter"], "must be a list of scores"),
        (["callbacks.greedy_bleu.dev_scores=null"], "must be a list of scores"),
    ],
)
def test_a_dev_score_left_out_that_selects_or_a_wrong_name_is_one_line(toy_corpus, tmp_path,
                                                                      extra, says):  # fmt: skip
    from conftest import tiny_overrides

    args = [
        *tiny_overrides(toy_corpus),
        "trainer.max_epochs=1",
        f"hydra.run.dir={tmp_path}",
        *extra,
    ]
    res = run_here(["train", *args])
    err = res.stderr.decode()
    assert res.returncode != 0 and "Traceback" not in err
    assert says in err.strip().splitlines()[-1]
