"""`xtc-katas notebook [N]`: serve the marimo app on a free local port, print its URL.

marimo's own server (`marimo run`: the app read-only) runs in a child process, with a
fresh access token, as the app writes the learner's stub: only who has the URL may use
it. The token reaches marimo on its stdin, never on its command line, where any local
user would read it in `ps`. marimo's update check is off: the app starts offline too.
"""

from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import webbrowser
from dataclasses import dataclass
from pathlib import Path

from xtc_katas import ROOT
from xtc_katas.kata.manifest import Kata

APP = Path(__file__).with_name("app.py")
KATA_ENV = "XTC_KATAS_NOTEBOOK_KATA"
#: Seconds for marimo's server to answer (its import and start take 2-4 s on 2 cores).
START_TIMEOUT = 90.0


@dataclass
class Server:
    process: subprocess.Popen[bytes]
    url: str  # with the access token

    def stop(self, timeout: float = 15.0) -> None:
        """SIGINT, as Ctrl-C: marimo then exits through Python's normal shutdown, so a
        test run in progress is stopped (runner.stop_all, atexit). Not SIGTERM: uvicorn
        re-raises it after its own shutdown, killing the process before atexit runs."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as reply:
            return bool(200 <= reply.status < 400)
    except (urllib.error.URLError, OSError):
        return False


def start(kata: Kata, port: int | None = None, root: Path = ROOT, quiet: bool = False) -> Server:
    """marimo's server for `kata` of the repository at `root` (its own xtc_katas first on
    the path), answering; RuntimeError if it never does."""
    if port is None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = int(probe.getsockname()[1])
    token = secrets.token_urlsafe(16)
    base = f"http://127.0.0.1:{port}"
    path = os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, KATA_ENV: kata.id, "PYTHONPATH": path, "MARIMO_SKIP_UPDATE_CHECK": "1"}
    command = [
        sys.executable, "-m", "marimo", "run", str(APP), "--headless",
        "--host", "127.0.0.1", "--port", str(port), "--token-password-file", "-",
    ]  # fmt: skip
    process = subprocess.Popen(
        command,
        cwd=root,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL if quiet else None,
        stderr=subprocess.DEVNULL if quiet else None,
    )
    assert process.stdin is not None
    try:
        with process.stdin:  # marimo reads it to its end: closed at once
            process.stdin.write(token.encode())
    except BrokenPipeError:
        pass  # marimo stopped already: the poll below says so
    server = Server(process, f"{base}/?access_token={token}")
    deadline = time.monotonic() + START_TIMEOUT
    try:
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise RuntimeError(f"marimo's server stopped at once (exit {process.returncode})")
            if answers(f"{base}/health"):
                return server
            time.sleep(0.3)
        raise RuntimeError(f"marimo's server did not answer on {base} within {START_TIMEOUT:.0f} s")
    except BaseException:  # Ctrl-C or SIGTERM while it starts too: never orphan it
        server.stop()
        raise


def main(kata: Kata, port: int | None = None, browser: bool = True) -> int:
    def stop_on_term(_signum: int, _frame: object) -> None:
        raise KeyboardInterrupt  # `kill`, a closed terminal: stop marimo's server too

    # Before start(): a SIGTERM while marimo starts must stop it too, not orphan it.
    signal.signal(signal.SIGTERM, stop_on_term)
    try:
        server = start(kata, port)
    except RuntimeError as exc:
        print(f"xtc-katas: the notebook for {kata.id} did not start: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0
    print(f"notebook for {kata.id}: {server.url}", flush=True)
    print(
        "(Ctrl-C stops it, and a test run in progress; the stub you edit there is "
        f"katas/{kata.id}/{kata.stub_path().name}, the same file pytest tests)",
        flush=True,
    )
    # A desktop session only: in a bare terminal, webbrowser would start a text browser.
    desktop = sys.platform in ("darwin", "win32") or any(
        os.environ.get(name) for name in ("DISPLAY", "WAYLAND_DISPLAY")
    )
    if browser and desktop:
        webbrowser.open(server.url)
    try:
        return server.process.wait() or 0
    except KeyboardInterrupt:
        return 0
    finally:
        server.stop()
