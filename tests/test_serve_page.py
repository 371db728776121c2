"""The attention page in a real browser (headless Chromium; ``.ci/run`` installs Debian's
package when it is missing): each model's translation and attention as the API gives them, typed
markup shown as text, and a screenshot."""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
from pathlib import Path

import pytest
from serve_helpers import post

SCREENSHOTS = Path(
    os.environ.get("LUONG_LIT_SCREENSHOTS", Path(tempfile.gettempdir()) / "luong_lit_screenshots")
)


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
