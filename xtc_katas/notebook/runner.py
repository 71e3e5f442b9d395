"""Run a kata's tests for the notebook: pytest in a subprocess (a crashing kernel takes
its process with it, not the app), streamed, cancellable.

It is the terminal's command (`pytest katas/NN_name`), so the verdicts are the terminal's.
They come from what pytest writes, never from its terminal text: the progress record
(kata/progress.py) and, for each failure's text, pytest's JUnit XML report.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import re
import signal
import subprocess
import sys
import threading
import time
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from xtc_katas import ROOT
from xtc_katas.kata import progress
from xtc_katas.kata.manifest import Kata
from xtc_katas.kata.run_lock import RunLock

#: One line of `pytest -v` per finished test: its node id and outcome.
TEST_LINE = re.compile(r"^(\S+::\S+) (PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)")
COLLECTED = re.compile(r"collected (\d+) items?(?: / (\d+) deselected)?")
#: Seconds pytest has to end after SIGTERM (cancel, the server stopping) before SIGKILL.
TERM_GRACE = 5.0
#: pytest's report, under .xtc-katas/: one path is enough, as the run lock allows one run.
JUNIT = "notebook-junit.xml"


@dataclass(frozen=True)
class TaskVerdict:
    function: str
    state: str  # "passed", "failed", "not run"
    failures: tuple[tuple[str, str], ...] = ()  # (node id, pytest's failure text)


@dataclass
class RunResult:
    returncode: int | None
    output: str
    seconds: float
    tasks: list[TaskVerdict] = field(default_factory=list)
    #: (task, backend, figures) of every raced test, in the run's order.
    figures: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)
    cancelled: bool = False
    problem: str = ""  # the run itself went wrong (crash, no report): what to do


def pytest_command(
    kata: Kata, junit: Path, quick: bool = False, backends: Sequence[str] = (), task: str = ""
) -> list[str]:
    """The learner's command (`pytest katas/NN_name`), verbose, with pytest's JUnit report;
    `quick` leaves the races out, `task` keeps one function's tests (`-k`, without those
    of a longer function containing its name: `schedule_conv_parallel`'s)."""
    args = [sys.executable, "-m", "pytest", f"katas/{kata.id}", "-v", "--no-header"]
    args += ["-p", "no:warnings", "-o", "console_output_style=classic", f"--junitxml={junit}"]
    if quick:
        args += ["-m", "not perf"]
    args += [f"--backend={b}" for b in backends]
    if task:
        longer = [t.function for t in kata.tasks if t.function != task and task in t.function]
        args += ["-k", " and ".join([task, *(f"not {f}" for f in longer)])]
    return args


def failure_texts(junit: Path) -> dict[str, str]:
    """{node id: failure text as pytest prints it} from pytest's JUnit XML report."""
    texts: dict[str, str] = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        # the node id: kata folders hold no dot in their names
        nodeid = case.get("classname", "").replace(".", "/") + f".py::{case.get('name')}"
        for child in case:
            if child.tag in ("failure", "error"):
                texts.setdefault(nodeid, (child.text or child.get("message", "")).strip())
    return texts


def verdicts(
    kata: Kata, failures: dict[str, str], since: float, root: Path = ROOT
) -> tuple[list[TaskVerdict], list[tuple[str, str, dict[str, Any]]]]:
    """Each task's verdict from the tests recorded since `since` (this run): passed when
    all its tests passed, with `failures`' text for each that failed; and their figures."""
    fresh = {k: r for k, r in progress.read(root).items() if r.kata == kata.id and r.when >= since}
    tasks = []
    for t in kata.tasks:
        mine = {k: r for k, r in fresh.items() if t.function in r.tasks and r.outcome != "skipped"}
        failed = tuple((k, failures.get(k, r.message)) for k, r in mine.items() if not r.passed)
        state = "not run" if not mine else "failed" if failed else "passed"
        tasks.append(TaskVerdict(t.function, state, failed))
    figures = [(r.tasks[0], r.backend, f) for r in fresh.values() if r.tasks for f in r.perf]
    return tasks, figures


def problem(kata: Kata, code: int, reported: bool) -> str:
    """What to tell when pytest ended neither with 0 nor 1, or without its report ("" when
    it ended well)."""
    if reported and code >= 0:
        if code in (0, 1):
            return ""
        try:
            meaning = pytest.ExitCode(code).name.lower().replace("_", " ")
        except ValueError:
            meaning = "not one of pytest's codes"
        return (
            f"{kata.id}: pytest ended with exit code {code} ({meaning}): the verdicts below "
            f"may be incomplete. Run `xtc-katas run {kata.number}` in a terminal to see why."
        )
    cause = f"pytest stopped with exit code {code} before writing its report"
    if code < 0:
        name = f"signal {-code}"
        with contextlib.suppress(ValueError):
            name = signal.Signals(-code).name
        cause = f"pytest was killed by {name}"
    return (
        f"{kata.id}: the test run crashed ({cause}); the notebook is fine. Run "
        f"`xtc-katas run {kata.number}` in a terminal to see the whole output, and check "
        f"{kata.stub_path().name} for code that runs at import. pytest's last lines below."
    )


class KataRun:
    """One run of a kata's tests, in a subprocess, under the repository's run lock.

    `start()` takes the lock (RunBusy if another run holds it) and starts pytest, which
    holds it while it lives. A thread reads its output (`lines`, `done_tests`, `total`),
    then sets `result` and releases the lock. `cancel()` stops pytest and its kernels.
    """

    def __init__(
        self,
        kata: Kata,
        quick: bool = False,
        backends: Sequence[str] = (),
        task: str = "",
        root: Path = ROOT,
    ) -> None:
        self.kata = kata
        self.root = root
        self.junit = root / ".xtc-katas" / JUNIT
        self.options = (quick, tuple(backends), task)
        self.lines: list[str] = []
        self.total: int | None = None
        self.done_tests = 0
        self.result: RunResult | None = None
        self.started = 0.0
        self._process: subprocess.Popen[str] | None = None
        self._cancelled = False
        self._thread: threading.Thread | None = None

    @property
    def running(self) -> bool:
        return self._thread is not None and self.result is None

    def start(self) -> KataRun:
        lock = RunLock(f"the notebook on {self.kata.id}", self.root)
        lock.acquire()
        try:
            self.junit.unlink(missing_ok=True)  # a report left by an earlier run
            self.started = time.time()
            self._process = subprocess.Popen(
                pytest_command(self.kata, self.junit, *self.options),
                cwd=self.root,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                bufsize=1,
                start_new_session=True,  # cancel stops pytest's forked kernels too
                pass_fds=(lock.fileno(),),  # the lock lives as long as pytest
            )
        except BaseException:
            lock.release()
            raise
        _LIVE.add(self)
        self._thread = threading.Thread(target=self._follow, args=(lock,), daemon=True)
        self._thread.start()
        return self

    def wait(self, timeout: float | None = None) -> RunResult | None:
        if self._thread is not None:
            self._thread.join(timeout)
        return self.result

    def cancel(self) -> None:
        """SIGTERM to pytest's process group, SIGKILL to what is left of it after TERM_GRACE
        s at most. The run shows as cancelled only if pytest did die of a signal."""
        process = self._process
        if process is None or process.poll() is not None:
            return
        self._cancelled = True
        with contextlib.suppress(ProcessLookupError, subprocess.TimeoutExpired):
            try:
                os.killpg(process.pid, signal.SIGTERM)
                process.wait(TERM_GRACE)
            finally:  # pytest's forked kernels (same group) may outlive it
                os.killpg(process.pid, signal.SIGKILL)

    def _follow(self, lock: RunLock) -> None:
        assert self._process is not None and self._process.stdout is not None
        try:
            for line in self._process.stdout:
                line = line.rstrip("\n")
                self.lines.append(line)
                if TEST_LINE.match(line):
                    self.done_tests += 1
                elif self.total is None and (found := COLLECTED.search(line)):
                    self.total = int(found.group(1)) - int(found.group(2) or 0)
            self.result = self._finish(self._process.wait())
        except BaseException as exc:  # the app must hear of it, never hang on `running`
            lost = f"{self.kata.id}: the notebook lost the test run: {exc!r}"
            output = "\n".join(self.lines)
            self.result = RunResult(None, output, time.time() - self.started, problem=lost)
        finally:
            lock.release()
            _LIVE.discard(self)

    def _finish(self, code: int) -> RunResult:
        result = RunResult(code, "\n".join(self.lines), time.time() - self.started)
        if self._cancelled and code < 0:  # not if pytest ended before the signal
            result.cancelled = True
            return result
        reported = self.junit.exists()
        if reported:
            failures = failure_texts(self.junit)
            result.tasks, result.figures = verdicts(self.kata, failures, self.started, self.root)
        result.problem = problem(self.kata, code, reported)
        return result


#: Runs in progress in this process, stopped when it exits (see stop_all).
_LIVE: set[KataRun] = set()


@atexit.register
def stop_all() -> None:
    """Cancel every run still going as this process exits: no pytest outlives the notebook
    to race a later run."""
    for run in list(_LIVE):
        run.cancel()
        run.wait(TERM_GRACE)
