"""The translation server: its JSON API, several models side by side, and the attention page in
a real browser (headless Chromium; ``.ci/run`` installs Debian's package when it is missing)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from conftest import compose_cfg, tiny_overrides

import luong_lit

REPO = Path(__file__).resolve().parents[1]
SCREENSHOTS = Path(
    os.environ.get("LUONG_LIT_SCREENSHOTS", Path(tempfile.gettempdir()) / "luong_lit_screenshots")
)


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def call(port: int, path: str, body: bytes | None = None) -> tuple[int, dict]:
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=body,
                                 method="POST" if body is not None else "GET")  # fmt: skip
    try:
        with urllib.request.urlopen(req, timeout=60) as res:
            return res.status, json.loads(res.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def post(port: int, body: bytes, path: str = "/translate") -> tuple[int, dict]:
    return call(port, path, body)


def start_server(*args: str) -> tuple[subprocess.Popen, int, str]:
    """``python -m luong_lit serve ARGS`` on a free port, once it answers; and what it printed."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "luong_lit", "serve", *args, "--port", str(port)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )  # fmt: skip
    deadline = time.time() + 120
    while time.time() < deadline:
        assert proc.poll() is None, proc.stderr.read()
        try:
            if call(port, "/health")[1]["status"] == "ok":
                break
        except OSError:
            time.sleep(0.2)
    banner = [proc.stdout.readline() for _ in range(3)]
    return proc, port, "".join(banner)


@pytest.fixture(scope="module")
def local_p_model(toy_corpus, tmp_path_factory) -> Path:
    """A toy local-p model with the lowercase recipe: its attention has a p_t per step."""
    from luong_lit.commands.train import train

    out = tmp_path_factory.mktemp("local_p")
    recipe = ["data.preprocess={lowercase:true,moses:true}", "data.src_lang=en", "data.tgt_lang=de"]
    local = ["attention=local_p", "model.net.attention.D=2", "trainer.max_epochs=2"]
    cfg = compose_cfg(tiny_overrides(toy_corpus) + recipe + local, out)
    train(cfg)
    return out / "checkpoints" / "best.ckpt"


#: the decoding of the module's server (a toy model's outputs are at least as long as its input)
OPTS = {"beam": 2, "max_src_len": 5, "min_len_ratio": 1.0}


def load(ckpt, **changes):
    return luong_lit.load(ckpt, **{**OPTS, **changes})


@pytest.fixture(scope="module")
def server(lowercase_model, local_p_model):
    proc, port, banner = start_server(
        f"global={lowercase_model}", f"local_p={local_p_model}", "--beam", "2",
        "--max-sentences", "3", "--max-chars", "40", "--max-wait-ms", "300", "--max-src-len", "5",
        "--min-len-ratio", "1.0",
    )  # fmt: skip
    yield proc, port, banner
    proc.kill()


# ------------------------------------------------------------------------ the JSON API
def test_the_server_translates_as_the_api_does(lowercase_model, server):
    _, port, _ = server
    want = load(lowercase_model).translate(["A B C", "D E F."])
    status, answer = post(port, b'{"text": ["A B C", "D E F."]}')
    assert status == 200 and answer["translations"] == want and answer["model"] == "global"
    status, answer = post(port, b'{"text": "A B C"}')
    assert status == 200 and answer["translations"] == want[:1]


def test_each_model_answers_by_its_name_and_a_request_chooses_its_decoding(local_p_model, server):
    _, port, _ = server
    mine = load(local_p_model, beam=3)
    status, answer = post(port, b'{"text": ["A B C"], "model": "local_p", "beam": 3, "n_best": 2}')
    assert status == 200 and answer["model"] == "local_p"
    assert [h["text"] for h in answer["translations"][0]] == [
        h.text for h in mine.n_best(["A B C"], 2)[0]
    ]
    status, answer = post(port, b'{"text": "A B", "model": "nope"}')
    assert (
        status == 404
        and "no model 'nope'" in answer["error"]
        and "'global', 'local_p'" in answer["error"]
    )


def test_the_answer_names_the_sentences_cut_to_the_limit(server):
    """``--max-src-len 5``: a six-word sentence is cut, and the answer says which one was."""
    _, port, _ = server
    status, answer = post(port, b'{"text": ["A B C", "A B C D E F G", "D E"]}')
    assert status == 200 and answer["truncated"] == [1]


def test_post_attention_is_the_apis_attention(lowercase_model, local_p_model, server):
    _, port, _ = server
    for name, ckpt in (("global", lowercase_model), ("local_p", local_p_model)):
        want = load(ckpt).attention("A B C D")
        status, got = post(
            port, json.dumps({"text": "A B C D", "model": name}).encode(), "/attention"
        )
        assert status == 200 and got["model"] == name
        assert (got["source"], got["target"]) == (want.source, want.target)
        assert got["links"] == [list(x) for x in want.links]
        flat = [w for row in got["weights"] for w in row]
        assert flat == pytest.approx([w for row in want.weights for w in row], abs=1e-6)
        if name == "local_p":  # a window centre per step, and its half-width
            assert got["p_t"] == pytest.approx(want.p_t, abs=1e-5) and got["D"] == 2
            assert len(got["p_t"]) == len(got["target"])
        else:
            assert got["p_t"] is None


@pytest.mark.parametrize(
    "path,body,status,says",
    [
        ("/translate", b"{not json", 400, "not JSON"),
        ("/translate", b'{"txt": "a"}', 400, 'expected {"text"'),
        ("/translate", b'{"text": []}', 400, "no sentences"),
        ("/translate", b'{"text": ["a", "b", "c", "d"]}', 413, "4 sentences; at most 3"),
        ("/translate", b'{"text": ["' + b"a " * 30 + b'"]}', 413, "60 characters; at most 40"),
        ("/translate", b'{"text": ["a\\nb"]}', 400, "line break"),
        ("/translate", b"\xff\xfe", 400, "not JSON"),
        ("/translate", b'{"text": "a\\u0001b"}', 400, "sentence 0: control character U+0001"),
        ("/attention", b'{"text": ["a", "b"]}', 400, 'expected {"text": "one sentence"}'),
        ("/attention", b'{"text": "a", "beam": 0}', 400, '"beam" must be an integer from 1'),
        (
            "/attention",
            b'{"text": "a", "beam": 2, "n_best": 3}',
            400,
            'needs a "beam" of at least 3',
        ),
        ("/attention", b'{"text": "a", "replace_unk": "yes"}', 400, '"replace_unk" must be true'),
    ],
)
def test_bad_requests_get_a_4xx_and_the_server_goes_on(server, path, body, status, says):
    proc, port, _ = server
    code, answer = post(port, body, path)
    assert code == status and says in answer["error"]
    assert proc.poll() is None and post(port, b'{"text": "a b"}')[0] == 200


def test_space_like_characters_are_spaces_for_the_server_as_for_translate(lowercase_model, server):
    _, port, _ = server
    status, answer = post(port, json.dumps({"text": "A\u000bB\u2028C"}).encode())
    assert status == 200 and answer["translations"] == load(lowercase_model).translate(["A B C"])


def test_concurrent_requests_are_decoded_in_shared_batches(lowercase_model, server):
    _, port, _ = server
    sentences = [f"{a} {b}" for a in "ABCD" for b in "EF"]
    want = load(lowercase_model).translate(sentences)
    before = call(port, "/health")[1]["batches"]
    with ThreadPoolExecutor(8) as pool:
        got = list(pool.map(lambda s: post(port, json.dumps({"text": s}).encode()), sentences))
    assert [a["translations"][0] for _, a in got] == want
    assert call(port, "/health")[1]["batches"] - before < len(sentences)


def test_the_server_says_where_it_listens_what_it_serves_and_how(server, lowercase_model):
    _, port, banner = server
    assert f"serving on http://127.0.0.1:{port}/" in banner
    assert f"global = {lowercase_model}" in banner and "local_p = " in banner
    assert "beam 2" in banner and "sources over 5 tokens: truncate" in banner


def test_n_best_lists_as_translate_writes_them(lowercase_model):
    proc, port, _ = start_server(str(lowercase_model), "--beam", "3", "--n-best", "2")
    try:
        status, answer = post(port, b'{"text": ["A B C", ""]}')
    finally:
        proc.kill()
    want = luong_lit.load(lowercase_model, beam=3).n_best(["A B C", ""], 2)
    assert status == 200 and answer["model"] == "model"
    assert [[(h["text"], h["score"]) for h in x] for x in answer["translations"]] == [
        [(h.text, round(h.score, 4)) for h in x] for x in want
    ]


def test_sigterm_stops_the_server_cleanly(lowercase_model):
    proc, _, _ = start_server(str(lowercase_model))
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(30) == 0, proc.stderr.read()
    assert "Traceback" not in proc.stderr.read()


def test_names_are_given_to_every_checkpoint_or_to_none(lowercase_model):
    from luong_lit.errors import UsageError
    from luong_lit.serving import parse_model_specs

    assert parse_model_specs([str(lowercase_model)]) == [("model", [str(lowercase_model)])]
    assert parse_model_specs(["a=x.ckpt", "b=y.ckpt,z.ckpt"]) == [
        ("a", ["x.ckpt"]),
        ("b", ["y.ckpt", "z.ckpt"]),
    ]
    with pytest.raises(UsageError, match="name every checkpoint"):
        parse_model_specs(["a=x.ckpt", str(lowercase_model)])
    with pytest.raises(UsageError, match="a given twice"):
        parse_model_specs(["a=x.ckpt", "a=y.ckpt"])


# ------------------------------------------------------------------------ the page, in a browser
def page_panels(browser) -> list[dict]:
    return browser.eval("""[...document.querySelectorAll('#panels .panel')].map(p => ({
        model: p.dataset.model,
        translation: p.querySelector('.translation').textContent,
        cells: p.querySelectorAll('rect.cell').length,
        source: [...p.querySelectorAll('text.src')].map(t => t.textContent),
        target: [...p.querySelectorAll('text.tgt')].map(t => t.textContent),
        p_t: p.querySelectorAll('line.p_t').length,
        windows: p.querySelectorAll('rect.window').length}))""")


SAFE = """typeof pwned === "undefined" && document.scripts.length === 1
    && document.querySelectorAll("#panels img, #panels script").length === 0"""
SOURCE_SHOWN = (
    "[...document.querySelectorAll('text.src')].some(t => t.textContent.includes('script'))"
)


def test_the_page_shows_each_models_translation_and_attention_in_a_browser(server):
    from benchmarks.browser import Browser, chromium

    if chromium() is None and os.environ.get("CI"):
        pytest.fail("no chromium: .ci/run installs Debian's chromium package")
    if chromium() is None:
        pytest.skip("needs Debian's chromium (apt-get install chromium)")
    _, port, _ = server
    typed = "<script>pwned=1</script><img src=x>"  # within the server's 40 characters

    async def session():
        async with Browser() as b:
            await b.open(f"http://127.0.0.1:{port}/")
            await b.type_into("#text", "A B C D")
            await b.click("#go")
            await b.wait_for("document.querySelectorAll('#panels .panel svg').length === 2")
            first = await page_panels(b)
            await b.screenshot(SCREENSHOTS / "serve_page.png")
            await b.eval("document.getElementById('text').value = ''")
            await b.type_into("#text", typed)
            await b.click("#go")
            await b.wait_for(SOURCE_SHOWN)
            second = await page_panels(b)
            pwned = await b.eval(SAFE)
            return first, second, pwned

    first, second, safe = asyncio.run(session())
    for panel in first:
        want = post(
            server[1],
            json.dumps({"text": "A B C D", "model": panel["model"]}).encode(),
            "/attention",
        )[1]
        assert panel["translation"] == want["translation"] and panel["translation"]
        assert (panel["source"], panel["target"]) == (want["source"], want["target"])
        assert panel["cells"] == len(want["source"]) * len(want["target"])
    assert [p["model"] for p in first] == ["global", "local_p"]
    assert first[0]["p_t"] == 0 and first[1]["p_t"] == first[1]["windows"] == len(
        first[1]["target"]
    )
    assert safe, "typed markup ran or became page elements"
    assert any("<" in w for p in second for w in p["source"])  # shown as the text it is
    assert (SCREENSHOTS / "serve_page.png").stat().st_size > 10_000
