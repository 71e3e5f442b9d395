"""The graded run's record: a pytest plugin that writes one JSON line per event.

    python -m pytest katas/01_peak -p xtc_katas.grade.pytest_record --grade-record=PATH

The grader reads verdicts from this file, not from pytest's terminal text, and not from
JUnit XML: JUnit is written when the session ends, so a learner's function that kills
its process (os._exit, a segfault) or hangs until the grader kills it would leave no
report at all. Each line is flushed as it is written, so a run that dies still says what
it collected, which test it was in, and how every finished test went.

Events, in order (each a JSON object with an "event" key):

- collected: {"tests": [{"nodeid", "kata", "tasks", "backend"}]}, after deselection;
  the tasks a test checks are its `task` marker's, else the functions its name contains
  (the contract the kata plugin binds tests by, kata/stubs.functions_checked_by);
- start: {"nodeid"}, before each test;
- report: {"nodeid", "when", "outcome", "message", "output", "perf", "seconds"}, for each
  test's call and for any setup or teardown that did not pass; "perf" lists the figures
  the test recorded (the `record_perf` fixture's "perf" user properties: speedup,
  reference_speedup, bar, percent_of_peak, ...);
- finish: {"exitstatus"}, when the session ends normally.

Only pytest's public hooks and the kata package's manifest are used: the plugin keeps
working while the harness's internals (checks, measure, plugin) move.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import IO, Any

import pytest

from xtc_katas.checks.confine import guard_harness
from xtc_katas.kata.manifest import kata_of_path
from xtc_katas.kata.stubs import functions_checked_by

#: The longest failure message and captured output kept per test (characters): enough
#: for the kata's own explanation and the end of a traceback.
MESSAGE_LIMIT = 4000
OUTPUT_LIMIT = 2000


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.getgroup("xtc-katas grade").addoption(
        "--grade-record", metavar="PATH", help="write the run's record here, one JSON line each"
    )


def pytest_configure(config: pytest.Config) -> None:
    path = config.getoption("--grade-record")
    if path:
        guard_harness()  # in a confined grading: not dumpable
        config.pluginmanager.register(Recorder(Path(path)), "xtc-katas-grade-record")


def _tasks(item: pytest.Item) -> list[str]:
    kata = kata_of_path(Path(item.path))
    marker = item.get_closest_marker("task")
    if marker is not None:
        return list(marker.args)
    if kata is None:
        return []
    return functions_checked_by(kata, getattr(item, "originalname", item.name))


def _backend(item: pytest.Item) -> str:
    callspec = getattr(item, "callspec", None)
    chosen = callspec.params.get("backend") if callspec is not None else None
    return str(getattr(chosen, "name", chosen or ""))


class Recorder:
    """Appends each event to the record as one JSON line, flushed at once."""

    def __init__(self, path: Path) -> None:
        self.file: IO[str] = path.open("a", encoding="utf-8")

    def write(self, event: str, **fields: Any) -> None:
        self.file.write(json.dumps({"event": event, **fields}, default=str) + "\n")
        self.file.flush()

    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        tests = []
        for item in session.items:
            kata = kata_of_path(Path(item.path))
            tests.append(
                {
                    "nodeid": item.nodeid,
                    "kata": kata.id if kata else "",
                    "tasks": _tasks(item),
                    "backend": _backend(item),
                }
            )
        self.write("collected", tests=tests)

    def pytest_runtest_logstart(self, nodeid: str) -> None:
        self.write("start", nodeid=nodeid)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when != "call" and report.passed:
            return
        self.write(
            "report",
            nodeid=report.nodeid,
            when=report.when,
            outcome=report.outcome,
            message=report.longreprtext[:MESSAGE_LIMIT] if report.failed else "",
            output=report.capstdout[-OUTPUT_LIMIT:],
            perf=[value for key, value in report.user_properties if key == "perf"],
            seconds=report.duration,
        )

    def pytest_sessionfinish(self, exitstatus: int) -> None:
        self.write("finish", exitstatus=int(exitstatus))
        self.file.close()
