"""Run a kata's tests for the notebook: pytest in a subprocess, streamed, cancellable.

Why a subprocess: the kata's kernels are compiled and run by XTC, and a kernel that
crashes takes its process with it. pytest already runs each kernel in a forked child
(measure/isolation.py); running pytest itself outside the app's process means even a
crash of pytest leaves the app up, with a message. It is the same command the terminal
loop runs (`pytest katas/NN_name`, learner mode), so the verdicts and the progress
record (`xtc-katas status`) are the same as the terminal's on the same file.

What the app shows after a run comes from records pytest writes, never from parsing
its terminal text: each test's outcome, tasks, backend and figures from the progress
record (kata/progress.py, written by the plugin), and each failure's text, exactly as
pytest prints it, from pytest's own JUnit XML report.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from xtc_katas import ROOT
from xtc_katas.kata import progress, stubs
from xtc_katas.kata.manifest import Kata
from xtc_katas.kata.run_lock import RunLock

#: One line of `pytest -v` per finished test: its node id and outcome.
TEST_LINE = re.compile(r"^(\S+::\S+) (PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)")
COLLECTED = re.compile(r"collected (\d+) items?(?: / (\d+) deselected)?")
#: Seconds pytest has to end after SIGTERM (cancel, the server stopping) before SIGKILL.
TERM_GRACE = 5.0


@dataclass(frozen=True)
class TestVerdict:
    """One test of the run: its outcome and, when it failed, pytest's failure text."""

    __test__ = False  # not a pytest test class

    nodeid: str
    tasks: tuple[str, ...]
    backend: str
    outcome: str  # "passed", "failed", "skipped"
    message: str = ""
    perf: tuple[dict[str, Any], ...] = ()


@dataclass(frozen=True)
class TaskVerdict:
    function: str
    state: str  # "passed", "failed", "not run"
    failures: tuple[TestVerdict, ...] = ()


@dataclass
class RunResult:
    kata_id: str
    returncode: int | None
    output: str
    seconds: float
    tests: list[TestVerdict] = field(default_factory=list)
    tasks: list[TaskVerdict] = field(default_factory=list)
    cancelled: bool = False
    problem: str = ""  # the run itself went wrong (crash, no report): what to do

    @property
    def figures(self) -> list[tuple[str, str, dict[str, Any]]]:
        """(task, backend, figures) of every raced test, in the run's order."""
        return [(t.tasks[0], t.backend, f) for t in self.tests if t.tasks for f in t.perf]


def pytest_command(
    kata: Kata,
    junit: Path,
    quick: bool = False,
    backends: Sequence[str] = (),
    task: str = "",
) -> list[str]:
    """The learner's command (`pytest katas/NN_name`), verbose for the progress lines,
    with pytest's JUnit report for the failure texts; `quick` leaves the races out,
    `task` keeps one function's tests (`-k`: every test's name contains its function;
    the tests of a longer function containing that name, e.g. `schedule_conv_parallel`
    for `schedule_conv`, are left out as in `stubs.functions_checked_by`)."""
    args = [sys.executable, "-m", "pytest", f"katas/{kata.id}", "-v", "--no-header"]
    args += ["-p", "no:warnings", "-o", "console_output_style=classic", f"--junitxml={junit}"]
    if quick:
        args += ["-m", "not perf"]
    args += [f"--backend={b}" for b in backends]
    if task:
        longer = [t.function for t in kata.tasks if t.function != task and task in t.function]
        args += ["-k", " and ".join([task, *(f"not {f}" for f in longer)])]
    return args


def _nodeid(classname: str, name: str) -> str:
    """The node id of a JUnit test case: kata folders hold no dot in their names."""
    return "/".join(classname.split(".")) + f".py::{name}"


def read_junit(path: Path) -> dict[str, tuple[str, str]]:
    """{node id: (outcome, failure text as pytest prints it)} from pytest's JUnit XML."""
    found: dict[str, tuple[str, str]] = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        nodeid = _nodeid(case.get("classname", ""), case.get("name", ""))
        outcome, text = "passed", ""
        for child in case:
            if child.tag in ("failure", "error"):
                outcome, text = "failed", (child.text or child.get("message", "")).strip()
                break
            if child.tag == "skipped":
                outcome, text = "skipped", child.get("message", "")
        found[nodeid] = (outcome, text)
    return found


def verdicts(
    kata: Kata, junit: dict[str, tuple[str, str]], since: float, root: Path = ROOT
) -> tuple[list[TestVerdict], list[TaskVerdict]]:
    """Each test's verdict (tasks, backend and figures from the progress record of this
    run), and each task's: passed when all its tests of this run passed."""
    recorded = {k: r for k, r in progress.read(root).items() if r.kata == kata.id}
    tests = []
    for nodeid, (outcome, text) in junit.items():
        record = recorded.get(nodeid)
        fresh = record is not None and record.when >= since
        name = nodeid.split("::")[-1].split("[")[0]
        tasks = record.tasks if fresh else tuple(stubs.functions_checked_by(kata, name))
        backend = record.backend if fresh else ""
        perf = tuple(record.perf) if fresh else ()
        tests.append(TestVerdict(nodeid, tuple(tasks), backend, outcome, text, perf))
    tasks = []
    for task in kata.tasks:
        mine = [t for t in tests if task.function in t.tasks and t.outcome != "skipped"]
        failed = tuple(t for t in mine if t.outcome == "failed")
        state = "not run" if not mine else "failed" if failed else "passed"
        tasks.append(TaskVerdict(task.function, state, failed))
    return tests, tasks


def _exit_problem(kata: Kata, code: int) -> str:
    """pytest ended with a code other than 0 (all passed) or 1 (some failed)."""
    try:
        meaning = pytest.ExitCode(code).name.lower().replace("_", " ")
    except ValueError:
        meaning = "not one of pytest's codes"
    return (
        f"{kata.id}: pytest ended with exit code {code} ({meaning}): the verdicts below "
        f"may be incomplete. Run `xtc-katas run {kata.number}` in a terminal to see why."
    )


def _crash_message(kata: Kata, code: int) -> str:
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        cause = f"pytest was killed by {name}"
    else:
        cause = f"pytest stopped with exit code {code} before writing its report"
    return (
        f"{kata.id}: the test run crashed ({cause}); the notebook is fine. Run "
        f"`xtc-katas run {kata.number}` in a terminal to see the whole output, and check "
        f"{kata.stub_path().name} for code that runs at import. pytest's last lines below."
    )


class KataRun:
    """One run of a kata's tests, in a subprocess, under the repository's run lock.

    `start()` takes the lock (RunBusy if another run holds it) and starts pytest; a
    thread reads its output line by line (`lines`, `done_tests`, `total`) and, when it
    ends, builds `result` and releases the lock. pytest is given the lock's descriptor,
    so the lock stays held while it lives, even if this process ends first. `cancel()`
    stops pytest and its children (kernels run in forked children): SIGTERM to its
    process group, SIGKILL after TERM_GRACE seconds; the lock is released as it ends.
    Runs still going when the process exits normally (the server stopped by SIGINT,
    as server.Server.stop does) are stopped that way; a process killed outright runs
    no atexit, but its pytest keeps the lock, so no other run races it.
    """

    def __init__(
        self,
        kata: Kata,
        quick: bool = False,
        backends: Sequence[str] = (),
        root: Path = ROOT,
        env: dict[str, str] | None = None,
        task: str = "",
    ) -> None:
        self.kata = kata
        self.task = task
        self.quick = quick
        self.backends = tuple(backends)
        self.root = root
        self.env = env
        self.lines: list[str] = []
        self.total: int | None = None
        self.done_tests = 0
        self.result: RunResult | None = None
        self.started = 0.0
        self._process: subprocess.Popen[str] | None = None
        self._cancelled = False
        self._thread: threading.Thread | None = None
        self._scratch: Path | None = None

    @property
    def running(self) -> bool:
        return self._thread is not None and self.result is None

    def start(self) -> KataRun:
        lock = RunLock(f"the notebook on {self.kata.id}", self.root)
        lock.acquire()
        scratch = None
        try:
            scratch = self._scratch = Path(tempfile.mkdtemp(prefix="xtc-katas-notebook-"))
            junit = scratch / "junit.xml"
            self.started = time.time()
            self._process = subprocess.Popen(
                pytest_command(self.kata, junit, self.quick, self.backends, self.task),
                cwd=self.root,
                env=self.env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                bufsize=1,
                start_new_session=True,  # cancel stops pytest's forked kernels too
                pass_fds=(lock.fileno(),),  # the lock lives as long as pytest
            )
        except BaseException:
            lock.release()
            if scratch is not None:
                shutil.rmtree(scratch, ignore_errors=True)
            raise
        _LIVE.add(self)
        self._thread = threading.Thread(
            target=self._follow, args=(lock, scratch, junit), daemon=True
        )
        self._thread.start()
        return self

    def wait(self, timeout: float | None = None) -> RunResult | None:
        if self._thread is not None:
            self._thread.join(timeout)
        return self.result

    def cancel(self) -> None:
        """Stop pytest and its process group: SIGTERM, then SIGKILL after TERM_GRACE s.
        The run shows as cancelled only if pytest did die of a signal."""
        process = self._process
        if process is None or process.poll() is not None:
            return
        self._cancelled = True
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(process.pid, sig)
            except ProcessLookupError:
                return
            try:
                process.wait(TERM_GRACE)
            except subprocess.TimeoutExpired:
                continue
            # pytest ended; its forked kernels (same group) may linger: SIGKILL them.
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            return

    def _follow(self, lock: RunLock, scratch: Path, junit: Path) -> None:
        assert self._process is not None and self._process.stdout is not None
        try:
            for line in self._process.stdout:
                line = line.rstrip("\n")
                self.lines.append(line)
                if TEST_LINE.match(line):
                    self.done_tests += 1
                elif self.total is None and (found := COLLECTED.search(line)):
                    self.total = int(found.group(1)) - int(found.group(2) or 0)
            code = self._process.wait()
            self.result = self._finish(code, junit)
        except BaseException as exc:  # the app must hear of it, never hang on `running`
            self.result = RunResult(
                self.kata.id,
                None,
                "\n".join(self.lines),
                time.time() - self.started,
                problem=f"{self.kata.id}: the notebook lost the test run: {exc!r}",
            )
        finally:
            lock.release()
            shutil.rmtree(scratch, ignore_errors=True)
            _LIVE.discard(self)

    def _finish(self, code: int, junit: Path) -> RunResult:
        output = "\n".join(self.lines)
        result = RunResult(self.kata.id, code, output, time.time() - self.started)
        if self._cancelled and code < 0:  # not if pytest ended before the signal
            result.cancelled = True
            return result
        if not junit.exists():
            result.problem = _crash_message(self.kata, code)
            return result
        result.tests, result.tasks = verdicts(self.kata, read_junit(junit), self.started, self.root)
        if code < 0:
            result.problem = _crash_message(self.kata, code)
        elif code not in (0, 1):
            result.problem = _exit_problem(self.kata, code)
        return result


#: Runs in progress in this process, stopped when it exits (see stop_all).
_LIVE: set[KataRun] = set()


@atexit.register
def stop_all() -> None:
    """Stop every run still going (the server or kernel is shutting down): no pytest
    outlives the notebook, racing a later run, and no scratch directory is left."""
    for run in list(_LIVE):
        run.cancel()
        if run._thread is not None:
            run._thread.join(TERM_GRACE)
        if run._scratch is not None:
            shutil.rmtree(run._scratch, ignore_errors=True)
