"""The commands as a user runs them (``python -m luong_lit <command>``): translate's lines, n-best
lists, length options, interactive sessions, help pages."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
import torch
from conftest import REPO, run_cli, run_here, translate_lines


def line_reader(proc):
    """Lines of the process's output, handed over by a thread as they arrive."""
    import queue
    import threading

    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [lines.put(x) for x in proc.stdout], daemon=True).start()
    return lines


def read_line(lines, timeout: float = 60.0) -> str:
    import queue

    try:
        return lines.get(timeout=timeout).rstrip("\n")
    except queue.Empty:
        raise AssertionError("no answer within the time limit") from None


@pytest.fixture()
def ckpt(trained) -> str:
    """The trained toy run's best checkpoint."""
    return str(trained[0] / "checkpoints" / "best.ckpt")


# ------------------------------------------------------------------------ at a terminal
def in_terminal(args: list[str], typed: list[bytes], wait_for: list[int], timeout=120) -> tuple:
    """``python -m luong_lit ARGS`` with a pseudo-terminal as its standard streams: once it says
    it is ready, type each of ``typed`` when the output holds ``wait_for[i]`` more lines (echoed
    input, ``|||`` or translated lines); returns the exit status and everything it printed."""
    import pty
    import select

    pid, fd = pty.fork()
    if pid == 0:  # the child: the terminal is its stdin, stdout and stderr
        os.environ.update(PYTHONWARNINGS="ignore", OMP_NUM_THREADS="1")
        os.chdir(REPO)
        signal.signal(signal.SIGINT, signal.SIG_DFL)  # as at a terminal, though the suite was
        # started where SIGINT is ignored (a shell's background job), which exec would keep
        os.execv(sys.executable, [sys.executable, "-m", "luong_lit", *args])
    out, deadline = b"", time.time() + timeout

    def read_until(done) -> None:
        nonlocal out
        while not done() and time.time() < deadline:
            ready, _, _ = select.select([fd], [], [], 0.2)
            if ready:
                try:
                    out += os.read(fd, 65536)
                except OSError:
                    return

    read_until(lambda: b"ready:" in out and out.rstrip(b" ").endswith(b"\n"))  # loaded
    start = out.count(b"\n")  # answer lines are counted from the ready line on
    for keys, want in zip(typed, wait_for):
        read_until(lambda want=want: out.count(b"\n") - start >= want)
        os.write(fd, keys)
    while time.time() < deadline:
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # the child has gone: the terminal is closed
            break
        if not chunk:
            break
        out += chunk
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), out.decode("utf-8", "replace")


def test_interactive_mode_answers_each_line_before_the_next_is_written(lowercase_model):
    batch = translate_lines(lowercase_model, "A B C\nD E F\n", "--beam", "2")
    proc = subprocess.Popen(
        [sys.executable, "-m", "luong_lit", "translate", str(lowercase_model), "--beam", "2"]
        + ["--interactive", "--show-attention", "--quiet"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )
    lines = line_reader(proc)
    try:
        answers = []
        for line in ("A B C", "D E F"):
            proc.stdin.write(line + "\n")
            proc.stdin.flush()  # the next line is written only after this one's answer
            answers.append((read_line(lines), read_line(lines)))
        proc.stdin.write("\n")
        proc.stdin.close()
        assert proc.wait(60) == 0, proc.stderr.read()
    finally:
        proc.kill()
    assert [a for a, _ in answers] == batch
    for (_, attention), source in zip(answers, ("A B C", "D E F")):
        pairs = [p.split("→") for p in attention.split()]
        assert pairs and all(src in source.split() for _, src in pairs)  # the words as typed


def test_translate_keeps_line_counts_and_empty_lines(trained, tmp_path):
    out, _, _ = trained
    ckpt = str(out / "checkpoints" / "best.ckpt")
    src = tmp_path / "in.txt"
    src.write_text("a b c\n\nd e f g\n" + " ".join(["a"] * 80) + "\n", encoding="utf-8")
    res = run_cli(
        [
            "translate",
            ckpt,
            "-i",
            str(src),
            "-o",
            str(tmp_path / "o.txt"),
            "--beam",
            "3",
            "--replace-unk",
            "--max-src-len",
            "20",
            "--quiet",
        ]
    )
    assert res.returncode == 0, res.stderr.decode()
    lines = (tmp_path / "o.txt").read_text(encoding="utf-8").split("\n")
    assert len(lines) == 5 and lines[1] == "" and lines[4] == ""  # 4 lines + final newline
    # stdin to stdout, greedy, and an ensemble of the best and last checkpoints
    res = run_cli(
        ["translate", ckpt, str(out / "checkpoints" / "last.ckpt"), "--beam", "1", "--quiet"],
        stdin=b"a b\nc d e\n",
    )
    assert res.returncode == 0 and len(res.stdout.decode().splitlines()) == 2
    res = run_cli(["translate", ckpt, "--beam", "3", "--n-best", "2", "--quiet"], stdin=b"a b\n")
    assert [x.split(" ||| ")[0] for x in res.stdout.decode().splitlines()] == ["0", "0"]
    # two worker processes: the same lines in the same order; a bad worker count is named
    many = "".join(
        f"{' '.join('abcdefg'[: 1 + i % 7])}\n" if i % 5 else "\n" for i in range(40)
    ).encode()
    outs = [
        run_cli(
            ["translate", ckpt, "--beam", "3", "--replace-unk", "--batch-size", "4", "--quiet", *w],
            stdin=many,
        )
        for w in ([], ["--workers", "2"])
    ]
    assert all(r.returncode == 0 for r in outs) and outs[0].stdout == outs[1].stdout
    assert len(outs[1].stdout.decode().split("\n")) == 41
    res = run_cli(["translate", ckpt, "--workers", "0"], stdin=b"a\n")
    assert (
        res.returncode == 2
        and b"--workers must be an integer >= 1" in res.stderr
        and b"Traceback" not in res.stderr
    )


def test_translate_n_best_keeps_empty_lines_and_replaces_unks(trained, tmp_path):
    out, _, _ = trained
    state = torch.load(out / "checkpoints" / "best.ckpt", weights_only=True)
    state["state_dict"]["net.decoder.W_s.bias"][1] += 6.0  # <unk> becomes a likely output word
    torch.save(state, tmp_path / "unky.ckpt")
    ckpt = str(tmp_path / "unky.ckpt")
    src = ["zz a yy b", "", "c xx d"]
    common = [ckpt, "--beam", "3", "--n-best", "2", "--quiet"]
    plain, replaced = (
        run_cli(["translate", *common + extra], stdin="\n".join(src).encode() + b"\n")
        for extra in ([], ["--replace-unk"])
    )
    assert plain.returncode == 0 and replaced.returncode == 0, replaced.stderr.decode()
    plain, replaced = (r.stdout.decode().splitlines() for r in (plain, replaced))
    assert [x.split(" ||| ")[0] for x in replaced] == ["0", "0", "1", "1", "2", "2"]
    assert replaced[2:4] == ["1 |||  ||| 0.0000"] * 2
    n_unk = 0
    for p, r in zip(plain, replaced):
        i, p_words, r_words = (
            int(p.split(" ||| ")[0]),
            p.split(" ||| ")[1].split(),
            r.split(" ||| ")[1].split(),
        )
        assert len(p_words) == len(r_words) and "<unk>" not in r_words
        for pw, rw in zip(p_words, r_words):
            assert rw == pw or (pw == "<unk>" and rw in src[i].split())
        n_unk += p_words.count("<unk>")
    assert n_unk > 0  # the unknown source words came out as <unk> before replacement


def test_translate_length_options_apply_to_greedy_and_the_authors_decoder(trained):
    out, _, _ = trained
    ckpt = str(out / "checkpoints" / "best.ckpt")
    # "a b": greedy keeps 3·2 to 3·2 + 5 words; the authors' decoder counts </s> in S: 3·3 words
    for extra, lengths in ((["--beam", "1"], range(6, 12)), (["--authors-decoder"], [9])):
        res = run_cli(
            ["translate", ckpt, "--min-len-ratio", "3", "--max-len-ratio", "3", "--quiet", *extra],
            stdin=b"a b\n",
        )
        assert res.returncode == 0, res.stderr.decode()
        assert len(res.stdout.decode().split()) in lengths, (extra, res.stdout)
    res = run_cli(["translate", ckpt, "--authors-decoder", "--length-penalty", "avg"], stdin=b"a\n")
    assert res.returncode == 2 and b"--authors-decoder ranks by raw score" in res.stderr
    res = run_cli(
        ["translate", ckpt, "--authors-decoder", "--n-best", "12", "--quiet"], stdin=b"a b\n"
    )
    assert res.returncode == 0 and len(res.stdout.decode().splitlines()) == 12
    res = run_cli(["translate", ckpt, "--min-len-ratio", "2", "--max-len-ratio", "1"], stdin=b"a\n")
    assert (
        res.returncode == 2 and b"--min-len-ratio 2.0 and --max-len-ratio 1.0 must be" in res.stderr
    )
    res = run_cli(["translate", ckpt, "--beam", "500"], stdin=b"a\n")
    assert (
        res.returncode == 2
        and b"beam size 500 is larger than the model's target vocabulary" in res.stderr
    )
    res = run_cli(["translate", ckpt, "--n-best", "6"], stdin=b"a\n")
    assert (
        res.returncode == 2
        and b"--n-best 6 needs a beam of at least 6 (the beam is 5)" in res.stderr
    )


def test_translate_names_a_damaged_checkpoint(trained, tmp_path):
    out, _, _ = trained
    ckpt = torch.load(out / "checkpoints" / "best.ckpt", weights_only=True)
    ckpt["state_dict"] = {k: v for k, v in ckpt["state_dict"].items() if "W_s" not in k}
    torch.save(ckpt, tmp_path / "damaged.ckpt")
    res = run_cli(["translate", str(tmp_path / "damaged.ckpt")], stdin=b"a\n")
    assert res.returncode == 2 and b"damaged.ckpt: its weights do not fit" in res.stderr
    assert b"Traceback" not in res.stderr


def test_translate_empty_file_and_bad_input(trained, tmp_path):
    out, _, _ = trained
    ckpt = str(out / "checkpoints" / "best.ckpt")
    (tmp_path / "empty.txt").write_bytes(b"")
    res = run_cli(
        ["translate", ckpt, "-i", str(tmp_path / "empty.txt"), "-o", str(tmp_path / "o.txt")]
    )
    assert res.returncode == 0 and (tmp_path / "o.txt").read_bytes() == b""
    (tmp_path / "latin1.txt").write_bytes(b"a b\nd\xe9j\xe0\n")
    res = run_cli(["translate", ckpt, "-i", str(tmp_path / "latin1.txt")])
    assert res.returncode == 2 and b"latin1.txt:2: not valid UTF-8" in res.stderr
    assert b"Traceback" not in res.stderr
    res = run_cli(["translate", str(tmp_path / "none.ckpt")], stdin=b"a\n")
    assert res.returncode == 2 and b"none.ckpt: checkpoint does not exist" in res.stderr
    (tmp_path / "junk.ckpt").write_bytes(b"\x00junk")
    res = run_cli(["translate", str(tmp_path / "junk.ckpt")], stdin=b"a\n")
    assert res.returncode == 2 and b"junk.ckpt: not a readable checkpoint" in res.stderr
    assert b"Traceback" not in res.stderr


def test_ensemble_with_a_different_vocabulary_is_refused(trained, tmp_path):
    out, _, _ = trained
    ckpt = torch.load(out / "checkpoints" / "best.ckpt", weights_only=True)
    ckpt["luong_lit"]["tgt_vocab"] = (
        ckpt["luong_lit"]["tgt_vocab"][:4] + sorted(ckpt["luong_lit"]["tgt_vocab"][4:])[::-1]
    )
    torch.save(ckpt, tmp_path / "other.ckpt")
    res = run_cli(
        ["translate", str(out / "checkpoints" / "best.ckpt"), str(tmp_path / "other.ckpt")],
        stdin=b"a\n",
    )
    assert res.returncode == 2 and b"target vocabulary differs" in res.stderr


def test_malloc_tuning_takes_on_glibc_and_can_be_switched_off(monkeypatch):
    import platform

    from luong_lit.runtime import tune_malloc

    monkeypatch.setenv("LUONG_LIT_MALLOC_TUNE", "0")
    assert tune_malloc() is False
    monkeypatch.delenv("LUONG_LIT_MALLOC_TUNE")
    if platform.system() == "Linux" and platform.libc_ver()[0] == "glibc":
        assert tune_malloc() is True


def test_ctrl_c_ends_an_interactive_session_quietly(ckpt):
    status, out = in_terminal(["translate", ckpt, "--beam", "2"], [b"a b c\n", b"\x03"],
                              [0, 2])  # fmt: skip
    assert status == 0 and "Traceback" not in out and "KeyboardInterrupt" not in out, out


def test_an_interactive_n_best_list_numbers_each_sentence_and_holds_n_hypotheses(ckpt):
    typed = [b"a b c\n", b"d e\n", b"\x04"]
    status, out = in_terminal(["translate", ckpt, "--beam", "3", "--n-best", "3"], typed,
                              [0, 4, 8])  # fmt: skip
    lines = [line for line in out.splitlines() if " ||| " in line]
    assert status == 0 and [line.split(" ||| ")[0] for line in lines] == ["0"] * 3 + ["1"] * 3


# ------------------------------------------------------------------------ options that do less
def test_every_option_of_every_command_has_a_help_line_and_shows_its_default():
    import argparse
    import re

    from luong_lit.__main__ import COMMANDS, parser_of

    for name in sorted(set(COMMANDS) - {"train", "prepare"}):  # those two take Hydra overrides
        ap = parser_of(name)
        page = " ".join(ap.format_help().split())
        first = ap.description.strip().splitlines()[0]
        assert re.search(r"[.:]$", first), f"{name}: the help page starts with {first!r}"
        for action in ap._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            assert action.help, f"{name} {action.option_strings or action.dest}: no help line"
            if action.option_strings and action.default not in (None, False):
                assert f"(default: {action.default})" in page, f"{name} {action.option_strings}"
                assert "(unset" not in action.help, f"{name} {action.option_strings}: unset?"


def test_space_like_characters_translate_as_spaces(ckpt, tmp_path):
    vt = "a b c\nd\u000be\tf\u2028g\n"
    spaces = "a b c\nd e f g\n"
    outs = [
        run_here(["translate", ckpt, "--beam", "2", "--quiet"], t.encode()) for t in (vt, spaces)
    ]
    assert outs[0].returncode == 0 and outs[0].stdout == outs[1].stdout


def test_an_output_file_that_cannot_be_written_is_named(ckpt, tmp_path):
    (tmp_path / "ro").mkdir()
    (tmp_path / "ro" / "out.txt").mkdir()  # a folder where the file should go
    res = run_here(["translate", ckpt, "--quiet", "-o", str(tmp_path / "ro" / "out.txt")], b"a b\n")
    assert (
        res.returncode == 2
        and f"-o {tmp_path / 'ro' / 'out.txt'}: cannot write it" in res.stderr.decode()
    )


# ------------------------------------------------------------------------ smaller doors
def test_the_version_is_the_installed_packages_own():
    import importlib.metadata
    import re

    import luong_lit

    declared = re.search(r'(?m)^version = "([^"]+)"', (REPO / "pyproject.toml").read_text())
    assert luong_lit.__version__ == importlib.metadata.version("luong_lit") == declared.group(1)
    res = run_here(["--version"])
    assert res.returncode == 0 and res.stdout.decode() == f"luong_lit {luong_lit.__version__}\n"
    assert "--version" in run_here(["--help"]).stdout.decode()


def test_a_misspelt_command_is_answered_with_the_nearest_one():
    res = run_here(["tranlate", "x.ckpt"])
    said = res.stderr.decode()
    assert res.returncode == 2
    assert said.splitlines()[0] == "error: unknown command 'tranlate'; did you mean translate?"
    far = run_here(["frobnicate"]).stderr.decode().splitlines()[0]
    assert far == "error: unknown command 'frobnicate'"


def test_a_dictionary_implies_unknown_word_replacement():
    """``--dict`` is there to translate the words ``--replace-unk`` fills in: given alone, it
    turns replacement on (translate; serve's default for its requests), and says so."""
    from luong_lit.__main__ import parser_of
    from luong_lit.cli import search_options

    for name, head in (("translate", ["m.ckpt"]), ("serve", ["m.ckpt"])):
        ap = parser_of(name)
        assert search_options(ap.parse_args([*head, "--dict", "d.txt"])).replace_unk, name
        assert not search_options(ap.parse_args(head)).replace_unk, name
        assert "which it implies" in " ".join(ap.format_help().split()), name


def test_a_run_that_logs_to_tensorboard_says_how_to_watch_it(tmp_path):
    """``logger=tensorboard`` (or ``many``, csv and tensorboard): the run's first lines and its
    last say the ``tensorboard --logdir`` that shows it; another logger: no such line."""
    from conftest import compose_cfg
    from omegaconf import OmegaConf

    from luong_lit.training.run_lines import done_message, start_message

    for logger, hinted in (("many", True), ("csv", False)):  # many: csv and tensorboard
        run = tmp_path / logger
        (run / ".hydra").mkdir(parents=True)
        OmegaConf.save(compose_cfg([f"logger={logger}"], run), run / ".hydra" / "config.yaml")
        hint = f"see its curves with: tensorboard --logdir {run.resolve()}"
        first, *rest = start_message(run).splitlines()
        assert first.startswith(f"run folder: {run.resolve()} (if it stops")
        assert rest == ([hint] if hinted else []), logger
        assert (done_message(run).splitlines()[-1] == hint) is hinted, logger
