"""``luong_lit.serving``: the HTTP API of ``serve``: translations as the API gives them, named
models, requests checked, batching, a clean stop."""

from __future__ import annotations

import asyncio
import json
import re
import signal
from concurrent.futures import ThreadPoolExecutor

import pytest
from conftest import run_here
from serve_helpers import call, load, post, start_server

import luong_lit


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
        ("/translate", b"{}", 400, 'expected {"text"'),
        ("/translate", b'{"txt": "a"}', 400, 'unknown key "txt" (did you mean "text"?)'),
        ("/translate", b'{"text": "a", "bem": 5}', 400, 'unknown key "bem" (did you mean "beam"?)'),
        ("/attention", b'{"text": "a", "zzz": 1}', 400, 'a request may hold "text", "model"'),
        ("/translate", b'{"text": "a", "model": "nope"}', 404, "no model 'nope'"),
        ("/translate", b'{"text": "' + b"a" * (1 << 20) + b'"}', 413, "larger than 1048576 bytes"),
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
        ("/translate", b'{"text": "a", "n_best": 3}', 400, "n_best 3 needs a beam of at least 3"),
        ("/translate", b'{"text": "a", "beam": 50}', 400, "larger than the model's target vocab"),
    ],
)
def test_bad_requests_get_a_4xx_and_the_server_goes_on(server, path, body, status, says):
    proc, port, _ = server
    code, answer = post(port, body, path)
    assert code == status and says in answer["error"]
    assert proc.poll() is None and post(port, b'{"text": "a b"}')[0] == 200


def test_a_failure_of_the_server_itself_is_a_500_and_logged_with_its_cause(caplog):
    """Only the server's own failures are 500s, each logged with its traceback; what it refuses
    (its checks, aiohttp's body limit, an option the model cannot take) is a 4xx."""
    import asyncio
    from types import SimpleNamespace

    from aiohttp import web

    from luong_lit.errors import UsageError
    from luong_lit.serving.app import as_json
    from luong_lit.serving.requests import Limits

    def answer(err: Exception):
        async def handler(request):
            raise err

        request = SimpleNamespace(method="POST", path="/translate")
        res = asyncio.run(as_json(handler, Limits(max_body=1000))(request))
        return res.status, json.loads(res.body)["error"]

    with caplog.at_level("ERROR", logger="luong_lit.serve"):
        assert answer(web.HTTPRequestEntityTooLarge(1000, 5000)) == (
            413, "the body is larger than 1000 bytes, this server's limit")  # fmt: skip
        assert answer(UsageError("beam size 9 is larger")) == (400, "beam size 9 is larger")
        assert not caplog.records
        status, said = answer(RuntimeError("out of memory"))
    assert status == 500 and "out of memory" in said
    assert len(caplog.records) == 1 and caplog.records[0].exc_info[0] is RuntimeError
    assert "POST /translate failed" in caplog.records[0].getMessage()


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


def test_a_burst_beyond_the_queue_is_answered_503_with_retry_after_and_none_is_reset(
    lowercase_model,
):
    """300 connections at once against a server that holds 4 waiting requests: every one gets
    an HTTP answer, a translation or a 503 with ``Retry-After`` (:func:`burst` counts a 503
    without it apart); none is reset, none goes unanswered."""
    from scripts.serve_client import burst

    proc, port, _ = start_server(str(lowercase_model), "--max-queue", "4", "--beam", "2")
    try:
        counts = burst(port, 300, "A B C", timeout=120)
        health = call(port, "/health")[1]
    finally:
        proc.kill()
    assert set(counts) <= {"200", "503"} and sum(counts.values()) == 300, counts
    assert counts.get("503", 0) > 0 and counts.get("200", 0) >= 4, counts
    assert health["waiting"] == 0


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


def test_sigterm_stops_the_server_cleanly_and_each_request_is_a_line(lowercase_model):
    """Each request is one line on standard error, and the server says when it has stopped."""
    proc, port, _ = start_server(str(lowercase_model), request_log=True)
    try:
        answers = post(port, b'{"text": "A B"}')[0], call(port, "/translate")[0]
        proc.send_signal(signal.SIGTERM)
        status = proc.wait(30)
    finally:
        proc.kill()  # stopped already, unless something above failed
    said = proc.stderr.read()
    assert answers == (200, 405) and status == 0, said
    asked = [x for x in said.splitlines() if "GET /health " not in x]  # its start was awaited
    line = r'\d{4}-\d\d-\d\d [\d:,]+ 127\.0\.0\.1 "%s /translate HTTP/1\.1" %d \d+ bytes [\d.]+ s'
    assert len(asked) == 2 and re.fullmatch(line % ("POST", 200), asked[0]), said
    assert re.fullmatch(line % ("GET", 405), asked[1]), said
    last = proc.stdout.read().splitlines()
    assert last == [f"stopped serving on http://127.0.0.1:{port}/ (1 batch decoded)"]


def test_a_get_of_a_post_only_path_is_a_json_405_that_says_to_post():
    from aiohttp.test_utils import TestClient, TestServer

    from luong_lit.__main__ import parser_of
    from luong_lit.serving import Limits, make_app
    from luong_lit.serving.app import request_log

    async def ask(path: str):
        async with TestClient(TestServer(make_app([], Limits(), {}))) as client:
            res = await client.get(path)
            return res.status, res.headers.get("Allow"), await res.json()

    status, allow, answer = asyncio.run(ask("/translate"))
    assert (status, allow) == (405, "POST")
    assert answer == {"error": 'use POST for /translate, with a JSON body such as {"text": "a '
                      'sentence"} or {"text": ["a", "b"]}'}  # fmt: skip
    assert asyncio.run(ask("/attention"))[2]["error"].startswith("use POST for /attention")
    args = parser_of("serve").parse_args(["m.ckpt", "--no-request-log"])
    assert request_log(not args.no_request_log) == {"access_log": None}


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


def test_a_request_is_checked_against_the_servers_own_decoding_before_it_is_queued():
    """A beam in a request is the beam decoded, even under the authors' decoder (beam 1:
    greedy), and an n-best list longer than the server's beam is a 400, not a failed batch."""
    from types import SimpleNamespace

    from luong_lit.serving import BadRequest, ServedModel
    from luong_lit.serving.models import request_options
    from luong_lit.serving.requests import Settings
    from luong_lit.translator import SearchOptions

    def translator(defaults):  # the part of a Translator that checks a request's search
        return SimpleNamespace(search_options=lambda **changes: defaults.replace(**changes))

    authors = ServedModel("m", [], translator(SearchOptions(authors_decoder=True)))
    opts = request_options(authors, Settings.of("m", beam=1))
    assert not opts.authors_decoder and opts.search().beam == 1 and opts.n_best == 1
    opts = request_options(authors, Settings.of("m"))
    assert opts.search().beam == 12  # the authors' beam
    greedy = ServedModel("m", [], translator(SearchOptions(beam=1)))
    with pytest.raises(BadRequest, match=r"^n_best 2 needs a beam of at least 2 \(the beam is 1\)"):
        request_options(greedy, Settings.of("m", n_best=2))


def test_health_tells_the_page_the_beam_a_request_gets_by_default():
    from luong_lit.serving import health_info
    from luong_lit.translator import SearchOptions

    assert health_info(SearchOptions(authors_decoder=True))["beam"] == 12
    assert health_info(SearchOptions(beam=1)) == {
        "search": "greedy", "beam": 1, "n_best": 1, "replace_unk": False
    }  # fmt: skip


def test_serve_refuses_decoding_workers(lowercase_model):
    res = run_here(["serve", str(lowercase_model), "--workers", "2"])
    assert res.returncode == 2
    assert "serve decodes in its own process: leave out --workers" in res.stderr.decode()


def test_a_request_whose_client_left_does_not_stop_the_batcher():
    """A cancelled request (its client hung up) in a batch: the others get their answers, and
    the next batch is decoded."""
    from luong_lit.serving.batcher import Batcher

    def job(lines):
        import time

        time.sleep(0.05)
        return [x.upper() for x in lines]

    async def scenario():
        batcher = Batcher(max_batch=8, max_wait_ms=50)
        batcher.start()
        gone = asyncio.ensure_future(batcher.submit("k", job, ["a"]))
        kept = asyncio.ensure_future(batcher.submit("k", job, ["b", "c"]))
        await asyncio.sleep(0.06)  # both are in the batch being decoded
        gone.cancel()
        first = await asyncio.wait_for(kept, 5)
        later = await asyncio.wait_for(batcher.submit("k", job, ["d"]), 5)
        await batcher.stop()
        return first, later, gone.cancelled()

    assert asyncio.run(scenario()) == (["B", "C"], ["D"], True)
