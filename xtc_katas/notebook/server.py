"""`xtc-katas notebook [N]`: serve the marimo app on a free local port, print its URL.

The server is marimo's own (`marimo run`, the app read-only: learners use it, they do
not edit its cells), in a child process: the command prints the URL (with a fresh access
token: the app writes the learner's stub, so only who has the URL may use it), opens a
browser where there is a display, and stops the server on Ctrl-C or SIGTERM; a test run
in progress is stopped with it (runner.stop_all, at the server's exit). The token
reaches marimo on its stdin (`--token-password-file -`), never on its command line,
where any local user would read it in `ps`. marimo's update check is switched off: the
app must start the same with no network.
"""

from __future__ import annotations

import os
import re
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


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


def server_env(kata: Kata) -> dict[str, str]:
    env = dict(os.environ)
    env[KATA_ENV] = kata.id
    # The app imports this repository's xtc_katas (a copy's, in the harness's tests),
    # whichever one the venv has installed.
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env["MARIMO_SKIP_UPDATE_CHECK"] = "1"  # offline: no look-up of a newer marimo
    return env


def marimo_command(port: int, host: str = "127.0.0.1") -> list[str]:
    """marimo's server; it reads the access token on its stdin (see start)."""
    return [
        sys.executable, "-m", "marimo", "run", str(APP), "--headless",
        "--host", host, "--port", str(port), "--token-password-file", "-",
    ]  # fmt: skip


@dataclass
class Server:
    process: subprocess.Popen[bytes]
    url: str  # with the access token
    base: str  # without it

    def stop(self, timeout: float = 15.0) -> int | None:
        """SIGINT, as Ctrl-C: marimo then exits through Python's normal shutdown, so a
        test run in progress is stopped (runner.stop_all, atexit). Not SIGTERM: uvicorn
        re-raises it after its own shutdown, killing the process before atexit runs
        (the run's pytest would keep going; it would keep the run lock with it, though)."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.process.returncode


def answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as reply:
            return bool(200 <= reply.status < 400)
    except (urllib.error.URLError, OSError):
        return False


def start(
    kata: Kata, port: int | None = None, host: str = "127.0.0.1", quiet: bool = False
) -> Server:
    """marimo's server for `kata`, answering; RuntimeError with its output if it never
    does."""
    port = port or free_port(host)
    token = secrets.token_urlsafe(16)
    base = f"http://{host}:{port}"
    process = subprocess.Popen(
        marimo_command(port, host),
        cwd=ROOT,
        env=server_env(kata),
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
    server = Server(process, f"{base}/?access_token={token}", base)
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


def start_logged(
    command: list[str], cwd: Path, env: dict[str, str], log: Path, timeout: float = 120.0
) -> tuple[subprocess.Popen[bytes], str]:
    """`xtc-katas notebook ...` started with its output in the file `log` (never a pipe:
    marimo keeps logging, and a pipe nobody reads blocks the server once full): the
    process and the URL it prints; RuntimeError with the log if none comes."""
    with log.open("wb") as out:
        process = subprocess.Popen(command, cwd=cwd, env=env, stdout=out, stderr=out)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = re.search(r"notebook for \S+: (http://\S+)", log.read_text(errors="replace"))
        if found:
            return process, found.group(1)
        if process.poll() is not None:
            break
        time.sleep(0.2)
    if process.poll() is None:
        process.kill()
        process.wait()
    raise RuntimeError("the notebook printed no URL:\n" + log.read_text(errors="replace"))


def has_display() -> bool:
    """A browser can be opened: a desktop session (not a bare terminal, where Python's
    webbrowser would start a text browser in this terminal)."""
    return sys.platform in ("darwin", "win32") or bool(
        os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
    )


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
    if browser and has_display():
        webbrowser.open(server.url)

    try:
        return server.process.wait() or 0
    except KeyboardInterrupt:
        return 0
    finally:
        server.stop()
