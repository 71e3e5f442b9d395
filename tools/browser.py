"""A real browser for the browser tests and the docs' screenshots: Debian's chromium.

Playwright's own browser download cannot run here (and should not have to: a learner's
or CI's machine gets chromium from its package manager, `./run.sh test` installs it),
so Playwright launches the system chromium by its path, headless. Its default switches
already turn off the sandbox (CI runs as root, where it refuses to start) and the
background networking (no update, sync or metrics requests from an offline machine).
"""

from __future__ import annotations

import os
import shutil
from typing import Any

CHROMIUM_ENV = "XTC_KATAS_CHROMIUM"
HOW_TO_GET = (
    "the notebook's browser test needs chromium: `sudo apt-get install -y chromium` "
    "(Debian/Ubuntu; `./run.sh test` installs it when run as root), or set "
    f"{CHROMIUM_ENV} to a chromium or chrome executable"
)


def chromium_path() -> str | None:
    """The chromium to drive: $XTC_KATAS_CHROMIUM, else the first on PATH."""
    chosen = os.environ.get(CHROMIUM_ENV)
    if chosen:
        return chosen if os.access(chosen, os.X_OK) else None
    names = ("chromium", "chromium-browser", "google-chrome")
    return next(filter(None, map(shutil.which, names)), None)


def launch(playwright: Any, executable: str) -> Any:
    """A headless chromium under Playwright, from `executable` (never a download)."""
    return playwright.chromium.launch(executable_path=executable, headless=True)
