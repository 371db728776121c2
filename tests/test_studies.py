"""``studies/``: the quality studies run as a user runs them."""

from __future__ import annotations

import os
import subprocess
import sys

from conftest import REPO


def test_raw_text_benchmark_rebuilds_the_kits_output_from_tokens(lowercase_model, tmp_path):
    """The benchmark's "kit" recasing of ``--pretokenized`` output equals ``translate``'s own."""
    import json

    (tmp_path / "src.en").write_text("A B C.\nD, E F!\nG H\n", encoding="utf-8")
    (tmp_path / "ref.de").write_text("X B c.\nY B d!\nZ b\n", encoding="utf-8")
    cmd = [sys.executable, "-m", "studies.raw_text", str(lowercase_model), "--beam", "2"]
    cmd += ["--out", str(tmp_path / "out"), "--src", str(tmp_path / "src.en")]
    cmd += ["--ref", str(tmp_path / "ref.de")]
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    res = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, env=env)
    assert res.returncode == 0, res.stderr
    rows = [json.loads(x) for x in res.stdout.splitlines()]
    assert rows[0]["identical_lines"] == 3
    names = [r["recasing"] for r in rows[1:]]
    assert names[0].startswith("none") and names[-1].endswith("(the kit)")
    assert len({r["lowercased"] for r in rows[1:]}) == 1  # recasing changes case only
