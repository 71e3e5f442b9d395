"""The kata plugin around each test's run and report: what a test checks travels with its
report, the judges are checked after it, an untouched stub fails at once, and a failure
is told in the learner's words (--check-stubs: inverted, a test must fail on the stub)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from xtc_katas import ROOT
from xtc_katas.checks import integrity
from xtc_katas.kata import failures, stubs
from xtc_katas.kata.manifest import Kata
from xtc_katas.plugin.binding import BOUND, LEARNER_MODULE, bound_tasks, kata_of


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """What the test checks travels with its reports, to pytest-xdist's controller too."""
    kata = kata_of(item)
    if kata is None:
        return
    callspec = getattr(item, "callspec", None)
    chosen = callspec.params.get("backend") if callspec is not None else None
    backend = getattr(chosen, "name", "")
    bound = {"kata": kata.id, "tasks": bound_tasks(item), "backend": backend}
    item.user_properties.append((BOUND, bound))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    """After a kata test, the judges must be as they were (checks/integrity.py): a
    change fails that test, and is undone for the next."""
    try:
        return (yield)
    finally:
        kata = kata_of(item)
        if kata is not None and LEARNER_MODULE in getattr(item, "funcargs", {}):
            integrity.verify(f"{kata.id} › {item.name}")


@pytest.hookimpl(tryfirst=True, specname="pytest_runtest_call")
def pytest_runtest_call_stub_first(item: pytest.Item) -> None:
    """Fail at once, before any costly setup in the test body, on an untouched stub or a
    function the learner's module lacks (renamed or deleted)."""
    module = getattr(item, "funcargs", {}).get(LEARNER_MODULE)
    kata = kata_of(item)
    if module is None or kata is None:
        return
    missing = stubs.first_missing(module, bound_tasks(item))
    if missing:
        raise stubs.FunctionMissing(kata, missing)
    if item.config.getoption("--check-stubs"):
        return
    name = stubs.first_untouched(module, bound_tasks(item))
    if name:
        raise failures.StubNotImplemented(kata, name)


def _in_katas(item: pytest.Item) -> bool:
    return Path(item.path).resolve().is_relative_to(ROOT / "katas")


#: The failure's description (failures.describe), made once by the wrapper below before
#: the report is, and read by the report's first maker.
DESCRIBED = pytest.StashKey["tuple[str, bool] | None"]()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """A failure told without its traceback gets a report without one: pytest would
    format the traceback (reading every frame's source) only for the wrapper below to
    drop it. On an untouched stub that was most of a red run's time after start-up:
    36 failures of kata 10 spent 0.9 s there (cProfile, AMD EPYC family 23 model 1)."""
    described = item.stash.get(DESCRIBED, None)
    if call.when != "call" or described is None or described[1]:
        return None
    return pytest.TestReport(
        item.nodeid,
        item.location,
        {name: 1 for name in item.keywords},
        "failed",
        described[0],
        call.when,
        [(f"Captured {key} {call.when}", content) for (_, key, content) in item._report_sections],
        call.duration,
        call.start,
        call.stop,
        item.user_properties,
    )


@pytest.hookimpl(wrapper=True, specname="pytest_runtest_makereport")
def pytest_runtest_makereport_in_words(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Iterator[None] | Any:
    kata = kata_of(item)
    described = None
    if kata is not None and call.excinfo is not None:
        described = failures.describe(kata, call.excinfo.value, call.excinfo.tb)
    item.stash[DESCRIBED] = described
    report = yield
    if kata is None:
        return report
    if described:
        header, keep_traceback = described
        report.longrepr = f"{header}\n\n{report.longrepr}" if keep_traceback else header
    if item.config.getoption("--check-stubs") and _in_katas(item) and report.when == "call":
        stub_failure = (
            described is not None
            and call.excinfo is not None
            and isinstance(call.excinfo.value, NotImplementedError)
        )
        _invert_for_stub_check(report, kata, stub_failure)
    return report


def _invert_for_stub_check(report: Any, kata: Kata, stub_failure: bool) -> None:
    """In --check-stubs mode a kata test must fail, and fail with the stub's message."""
    if report.passed:
        report.outcome = "failed"
        report.longrepr = (
            f"{kata.id}: this test PASSES on the untouched stub, so it cannot catch a learner's "
            "mistake. Make it call the stub function and check its result."
        )
    elif stub_failure:
        report.outcome = "passed"
        report.longrepr = None
    else:
        report.longrepr = (
            f"{kata.id}: on the untouched stub this test must fail with the stub's "
            f"NotImplementedError, not this:\n\n{report.longrepr}"
        )
