"""class.html as an instructor sees it: opened in headless chromium (tools/browser.py),
read back (the table's rows, each plot's size as drawn) and, if asked, captured.

    .venv/bin/python -m tools.page_view grades/class.html docs/grading-class.png

The browser test reads the page this way; the docs' screenshot is taken this way.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from tools import browser

#: What the page shows once drawn: the table's row ids, each image's alt text and drawn
#: size, and the fairness statement.
READ_PAGE = """() => ({
  rows: [...document.querySelectorAll('#class tbody tr')].map(r => r.dataset.id),
  images: [...document.images].map(i => ({alt: i.alt, width: i.naturalWidth,
                                          height: i.naturalHeight})),
  rule: (document.querySelector('.rule') || {}).innerText || '',
})"""


def look(page_path: Path, screenshot: Path | None = None) -> dict[str, Any]:
    """What chromium shows of the page at `page_path`; a full-page PNG to `screenshot`."""
    chromium = browser.chromium_path()
    if chromium is None:
        raise RuntimeError(browser.HOW_TO_GET)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chrome = browser.launch(playwright, chromium)
        try:
            page = chrome.new_page(viewport={"width": 1280, "height": 900})
            page.goto(page_path.resolve().as_uri())
            page.wait_for_load_state("load")
            shown = page.evaluate(READ_PAGE)
            if screenshot is not None:
                page.screenshot(path=str(screenshot), full_page=True)
        finally:
            chrome.close()
    return shown


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("page", type=Path, help="a class.html")
    parser.add_argument("png", type=Path, help="where the screenshot goes")
    args = parser.parse_args(argv)
    try:
        shown = look(args.page, args.png)
    except RuntimeError as exc:
        print(exc, file=sys.stderr)
        return 1
    print(f"{len(shown['rows'])} rows, {len(shown['images'])} plots: wrote {args.png}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
