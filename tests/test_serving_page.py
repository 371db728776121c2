"""The attention page in a real browser (headless Chromium under Selenium; ``.ci/run`` installs
Debian's ``chromium`` and ``chromium-driver`` when they are missing): each model's translation and
attention as the API gives them, typed markup shown as text, and a screenshot."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import pytest
from serve_helpers import browser_programs, open_browser, post

SCREENSHOTS = Path(
    os.environ.get("LUONG_LIT_SCREENSHOTS", Path(tempfile.gettempdir()) / "luong_lit_screenshots")
)


# ------------------------------------------------------------------------ the page, in a browser
PANELS = """return [...document.querySelectorAll('#panels .panel')].map(p => ({
    model: p.dataset.model,
    translation: p.querySelector('.translation').textContent,
    cells: p.querySelectorAll('rect.cell').length,
    source: [...p.querySelectorAll('text.src')].map(t => t.textContent),
    target: [...p.querySelectorAll('text.tgt')].map(t => t.textContent),
    p_t: p.querySelectorAll('line.p_t').length,
    windows: p.querySelectorAll('rect.window').length}))"""


SAFE = """return typeof pwned === "undefined" && document.scripts.length === 1
    && document.querySelectorAll("#panels img, #panels script").length === 0"""


SOURCE_SHOWN = (
    "return [...document.querySelectorAll('text.src')].some(t => t.textContent.includes('script'))"
)


#: the page's panel of an answer with an empty translation, and of one with a long one
EDGES = """const answer = (t) => ({translation: t, hypotheses: [], source: ["a"], replaced: [],
    target: t ? t.split(" ") : [], weights: t ? t.split(" ").map(() => [1]) : [], links: []});
const empty = panel(MODELS[0], answer("")), long = panel(MODELS[0], answer("w ".repeat(199) + "w"));
document.body.append(empty, long);
const style = getComputedStyle(long), words = getComputedStyle(long.querySelector(".translation"));
return {empty: empty.querySelector(".translation").textContent,
    note: empty.querySelector(".empty")?.textContent ?? "",
    long: long.querySelector(".translation").textContent,
    long_note: long.querySelector(".empty")?.textContent ?? null,
    wraps: words.overflowWrap, scrolls: style.overflowX}"""


TWO_PANELS = "return document.querySelectorAll('#panels .panel svg').length === 2"
REFUSED = "return document.getElementById('status').className === 'error'"
STATUS = "return document.getElementById('status').textContent"


def translate_on_page(driver, text: str, until: str) -> list[dict]:
    """Type ``text``, press Translate, wait until the script ``until`` holds; the panels."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    box = driver.find_element(By.CSS_SELECTOR, "#text")
    box.clear()
    box.send_keys(text)
    driver.find_element(By.CSS_SELECTOR, "#go").click()
    WebDriverWait(driver, 60).until(lambda d: d.execute_script(until))
    return driver.execute_script(PANELS)


@pytest.mark.skipif(
    None in browser_programs() and not os.environ.get("CI"),
    reason="needs Debian's chromium and chromium-driver (CI installs them, and fails without)",
)
def test_the_page_shows_each_models_translation_and_attention_in_a_browser(server):
    if None in browser_programs():  # in CI a missing browser is a failure, not a skip
        pytest.fail("no chromium or chromedriver: .ci/run installs Debian's packages")
    _, port, _ = server
    typed = "<script>pwned=1</script><img src=x>"  # within the server's 40 characters
    driver = open_browser()
    try:
        driver.get(f"http://127.0.0.1:{port}/")
        first = translate_on_page(driver, "A B C D", TWO_PANELS)
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        assert driver.save_screenshot(str(SCREENSHOTS / "serve_page.png"))
        second = translate_on_page(driver, typed, SOURCE_SHOWN)
        safe = driver.execute_script(SAFE)
        refused = translate_on_page(driver, "a " * 30, REFUSED)  # over the 40 characters
        status = driver.execute_script(STATUS)
        shown = driver.execute_script(EDGES)
    finally:
        driver.quit()
    # an empty translation says so; a long one wraps in its panel, which scrolls, not cut off
    assert shown["empty"] == "" and "empty" in shown["note"] and shown["long_note"] is None
    assert shown["wraps"] == "anywhere" and shown["scrolls"] == "auto"
    assert shown["long"] == "w " * 199 + "w"
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
    assert "at most 40" in status and refused == []  # the error alone: the last result cleared
