"""One run of the katas' tests at a time per repository: `run`, `watch` and the notebook.

Two runs at once race each other's timings (each perf test times kernels side by side
and assumes the cores are its own) and both write the progress record at their end.
The lock is a file under `.xtc-katas/` held through `filelock` (an OS-level lock:
released by the kernel when its process dies, so a crashed run never leaves the
repository locked). Whoever holds it is written beside it, for the message the next
runner prints. The notebook hands the lock's descriptor to its pytest (`fileno()`): the
lock then stays held while that pytest lives, even if the notebook's server stops first.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from pathlib import Path

from filelock import FileLock, Timeout

from xtc_katas import ROOT


class RunBusy(RuntimeError):
    """Another run holds the repository's lock: `who` names it, the message says what to do."""

    def __init__(self, who: str) -> None:
        super().__init__(
            f"another run of the katas' tests is in progress ({who}): one run at a time, so "
            "that two never race each other's timings. Wait for it to end (or stop it), "
            "then run again."
        )
        self.who = who


def holder(root: Path = ROOT) -> str:
    """Who last took the lock (`"xtc-katas run 04_scheduling, pid 123"`), or ""."""
    try:
        return (root / ".xtc-katas" / "run.lock.holder").read_text().strip()
    except OSError:
        return ""


class RunLock:
    """The repository's run lock, taken by one run; released by the same object, from any
    thread (the notebook starts a run in its kernel and ends it in a reader thread)."""

    def __init__(self, what: str, root: Path = ROOT) -> None:
        self.what = what
        self.root = root
        self.holder_file = root / ".xtc-katas" / "run.lock.holder"
        self.holder_file.parent.mkdir(parents=True, exist_ok=True)
        self._fd: int | None = None
        # filelock runs `_took` once it holds the lock; if it raises (the holder file
        # cannot be written), filelock releases the lock again before re-raising.
        self._lock = FileLock(
            self.holder_file.with_name("run.lock"), thread_local=False, on_acquired=self._took
        )

    def _took(self, fd: int) -> None:
        self.holder_file.write_text(
            f"{self.what}, pid {os.getpid()}, since {time.strftime('%H:%M:%S')}\n"
        )
        self._fd = fd

    def fileno(self) -> int:
        """The held lock's descriptor: a child given it (`pass_fds`) keeps the lock held."""
        assert self._fd is not None, "the run lock is not held"
        return self._fd

    def acquire(self, wait: float = 0.0) -> None:
        """Take it, waiting `wait` seconds at most (0: not at all); else RunBusy."""
        try:
            self._lock.acquire(timeout=wait)
        except Timeout:
            raise RunBusy(holder(self.root) or "another run") from None

    def release(self) -> None:
        if not self._lock.is_locked:
            return
        self._fd = None
        with contextlib.suppress(OSError):
            self.holder_file.unlink()
        self._lock.release()


@contextlib.contextmanager
def run_lock(what: str, root: Path = ROOT, wait: float = 0.0) -> Iterator[None]:
    """Hold the repository's run lock while the block runs (`what` names the run), waiting
    `wait` seconds at most for a run in progress to end (0: do not wait), then RunBusy."""
    lock = RunLock(what, root)
    lock.acquire(wait)
    try:
        yield
    finally:
        lock.release()
