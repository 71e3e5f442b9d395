"""The README's screenshot: kata 04 solved in the notebook, its verdicts and speed chart.

    .venv/bin/python -m xtc_katas.notebook.screenshot docs/notebook-kata04.png

In a temporary copy of the repository, kata 04's stub is replaced by its solution, the
notebook is started, chromium (browser.py) presses "Run tests" (both backends, speed
races included) and the page is captured once the verdicts and the chart are shown.
Prints the time from the click to the verdicts.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from xtc_katas.kata.manifest import find
from xtc_katas.notebook import browser
from xtc_katas.notebook.server import start_logged
from xtc_katas.tools.repo_copy import copy_repository


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--kata", default="4")
    args = parser.parse_args(argv)
    chromium = browser.chromium_path()
    if chromium is None:
        print(browser.HOW_TO_GET, file=sys.stderr)
        return 1
    from playwright.sync_api import sync_playwright

    kata = find(args.kata)
    scratch = Path(tempfile.mkdtemp(prefix="xtc-katas-screenshot-"))
    try:
        repo = copy_repository(scratch)
        kata.stub_path(repo).write_text(kata.solution_path(repo).read_text())
        command = [sys.executable, "-m", "xtc_katas", "notebook", str(kata.number)]
        process, url = _start(repo, [*command, "--no-browser"])
        try:
            with sync_playwright() as playwright:
                chrome = browser.launch(playwright, chromium)
                page = chrome.new_page(viewport={"width": 1200, "height": 1250})
                page.goto(url)
                page.locator(".cm-content").first.wait_for(timeout=90_000)
                time.sleep(2)
                clicked = time.monotonic()
                page.get_by_role("button", name="Run tests").click()
                page.locator("img[alt*='speedups against the reference']").wait_for(timeout=900_000)
                print(f"run to verdicts: {time.monotonic() - clicked:.1f} s")
                time.sleep(1.5)
                page.get_by_role("heading", name="Run", exact=True).evaluate(
                    "e => e.scrollIntoView({block: 'start'})"
                )
                time.sleep(1)
                page.screenshot(path=str(args.out))
                chrome.close()
        finally:
            process.terminate()
            process.wait(30)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"wrote {args.out}")
    return 0


def _start(repo: Path, command: list[str]) -> tuple[subprocess.Popen[bytes], str]:
    """`xtc-katas notebook` in the copy (its own xtc_katas): the process and its URL;
    its output goes to notebook.log beside the copy (removed with the scratch dir)."""
    env = {**os.environ, "PYTHONPATH": str(repo), "MARIMO_SKIP_UPDATE_CHECK": "1"}
    return start_logged(command, repo, env, repo.parent / "notebook.log")


if __name__ == "__main__":
    raise SystemExit(main())
