"""The docs' screenshot: kata 04 solved in the notebook, its verdicts and speed chart.

    .venv/bin/python -m tools.screenshot docs/notebook-kata04.png

In a copy of the repository whose kata 04 stub is its solution, chromium (browser.py)
presses "Run tests" (both backends, speed races included) and captures the page once the
verdicts and the chart show. Prints the time from the click to the verdicts.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from tools import browser
from xtc_katas.grade.repo_copy import copy_repository
from xtc_katas.kata.manifest import find
from xtc_katas.notebook import server


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
    with tempfile.TemporaryDirectory(prefix="xtc-katas-screenshot-") as scratch:
        repo = copy_repository(Path(scratch))
        kata.stub_path(repo).write_text(kata.solution_path(repo).read_text())
        notebook = server.start(kata, root=repo, quiet=True)
        try:
            with sync_playwright() as playwright:
                chrome = browser.launch(playwright, chromium)
                page = chrome.new_page(viewport={"width": 1200, "height": 1250})
                page.goto(notebook.url)
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
            notebook.stop()
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
