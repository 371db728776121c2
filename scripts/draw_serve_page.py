"""Draw ``docs/serve_page.png``: the attention page (``serve``'s ``/``) for one sentence.

    python -m scripts.draw_serve_page global=RUN/checkpoints/best.ckpt [name=CKPT ...] \\
        --text "A man in a red shirt is riding a bike down the street." --out docs/serve_page.png

Starts ``python -m luong_lit serve`` with the models given, types the sentence into the page
in headless Chromium (Selenium, with Debian's ``chromium`` and ``chromium-driver``), presses
Translate, waits for every model's panel and saves the page as a PNG.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys

from scripts.serve_client import free_port, wait_until_up

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-sync",
         "--disable-background-networking", "--disable-component-update"]  # fmt: skip


def serve(models: list[str]) -> tuple[subprocess.Popen, int]:
    """``serve MODELS`` on a free port, once it answers ``/health``."""
    port = free_port()
    cmd = [sys.executable, "-m", "luong_lit", "serve", *models, "--port", str(port)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
    try:
        wait_until_up(proc, port)
    except RuntimeError as err:
        sys.exit(str(err))
    return proc, port


def shoot(port: int, args) -> None:
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    options = Options()
    options.binary_location = shutil.which("chromium") or shutil.which("chromium-browser")
    for flag in [*FLAGS, "--window-size=1500,900"]:
        options.add_argument(flag)
    driver = webdriver.Chrome(options, Service(executable_path=shutil.which("chromedriver")))
    try:
        driver.get(f"http://127.0.0.1:{port}/")
        driver.execute_script(f"document.getElementById('beam').value = {args.beam}")
        if args.replace_unk:
            driver.find_element(By.CSS_SELECTOR, "#unk").click()
        driver.find_element(By.CSS_SELECTOR, "#text").send_keys(args.text)
        driver.find_element(By.CSS_SELECTOR, "#go").click()
        n = len(args.models)
        done = f"return document.querySelectorAll('#panels .panel svg').length === {n}"
        WebDriverWait(driver, 120).until(lambda d: d.execute_script(done))
        driver.save_screenshot(args.out)
        print(args.out)
    finally:
        driver.quit()


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("models", nargs="+", help="NAME=CKPT, as serve takes them")
    ap.add_argument("--text", default="A man in a red shirt is riding a bike down the street.")
    ap.add_argument("--out", default="docs/serve_page.png")
    ap.add_argument("--beam", type=int, default=5)
    ap.add_argument("--replace-unk", action="store_true")
    args = ap.parse_args(argv)
    proc, port = serve(args.models)
    try:
        shoot(port, args)
    finally:
        proc.terminate()
        proc.wait(30)


if __name__ == "__main__":
    main()
