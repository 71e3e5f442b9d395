"""A real browser for the notebook's test and the README's screenshot: Debian's chromium.

Playwright's own browser download cannot run here (and should not have to: a learner's
or CI's machine gets chromium from its package manager, `./run.sh test` installs it),
so Playwright launches the system chromium by its path, headless, without the sandbox
(CI runs as root, where chromium's sandbox refuses to start) and with the background
networking off (no update, sync or metrics requests from an offline machine).
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
ARGS = (
    "--no-sandbox",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-default-apps",
    "--disable-sync",
    "--metrics-recording-only",
    "--no-first-run",
    "--disable-dev-shm-usage",  # small /dev/shm in containers
)


def chromium_path() -> str | None:
    """The chromium to drive: $XTC_KATAS_CHROMIUM, else the first on PATH."""
    chosen = os.environ.get(CHROMIUM_ENV)
    if chosen:
        return chosen if os.access(chosen, os.X_OK) else None
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


def launch(playwright: Any, executable: str) -> Any:
    """A headless chromium under Playwright, from `executable` (never a download)."""
    return playwright.chromium.launch(executable_path=executable, headless=True, args=list(ARGS))
