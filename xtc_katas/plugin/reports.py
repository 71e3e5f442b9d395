"""The kata plugin around each test's run and report: an untouched stub fails at once,
and a failure is told in the learner's words (--check-stubs: inverted, a test must fail
on the stub)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from xtc_katas import ROOT
from xtc_katas.kata import failures, stubs
from xtc_katas.kata.manifest import Kata
from xtc_katas.plugin.options import KATA, LEARNER_MODULE, TASKS


@pytest.hookimpl(tryfirst=True, specname="pytest_runtest_call")
def pytest_runtest_call_stub_first(item: pytest.Item) -> None:
    """Fail at once, before any costly setup in the test body, on an untouched stub or a
    function the learner's module lacks (renamed or deleted)."""
    learner = getattr(item, "funcargs", {}).get(LEARNER_MODULE)
    kata, tasks = item.stash.get(KATA, None), item.stash.get(TASKS, ())
    if learner is None or kata is None:
        return
    missing = next((f for f in tasks if f not in learner.loaded.functions), None)
    if missing:
        raise stubs.FunctionMissing(kata, missing)
    if item.config.getoption("--check-stubs"):
        return
    untouched = next((f for f in tasks if f in learner.loaded.untouched), None)
    if untouched:
        raise failures.StubNotImplemented(kata, untouched)


def _in_katas(item: pytest.Item) -> bool:
    return Path(item.path).resolve().is_relative_to(ROOT / "katas")


#: The failure's description (failures.describe), made once by the wrapper below before
#: the report is, and read by the report's first maker.
DESCRIBED = pytest.StashKey["failures.Told | None"]()
#: The user property a kata test's failed report carries what a learner's run prints of
#: it in (failures.Told.said; plugin/summary.py), to pytest-xdist's controller too.
SAID = "xtc-katas-said"
#: The user property of a failure on an untouched stub: told in full once per run.
STUB = "xtc-katas-stub"


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """A failure told without its traceback gets a report without one: pytest would
    format the traceback (reading every frame's source) only for the wrapper below to
    drop it: on an untouched stub that was most of a red run's time after start-up."""
    described = item.stash.get(DESCRIBED, None)
    if call.when != "call" or described is None or described.keep_traceback:
        return None
    return pytest.TestReport(
        item.nodeid,
        item.location,
        {name: 1 for name in item.keywords},
        "failed",
        described.said,
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
    """The report of a kata test's failure: the learner's words first, then the original
    error and pytest's traceback where they are kept (pytest -v and the grader read the
    whole report; a learner's run prints the words alone, plugin/summary.py)."""
    kata = item.stash.get(KATA, None)
    told = None
    if kata is not None and call.excinfo is not None:
        told = failures.describe(kata, call.excinfo.value, call.excinfo.tb)
    item.stash[DESCRIBED] = told
    report = yield
    if kata is None:
        return report
    stub_failure = told is not None and isinstance(call.excinfo.value, NotImplementedError)
    if told:
        below = [told.original] if told.original else []
        below += [str(report.longrepr)] if told.keep_traceback else []
        report.longrepr = "\n\n".join([told.said, *below])
        report.user_properties = [*report.user_properties, (SAID, told.said)]
        if stub_failure:
            report.user_properties.append((STUB, True))
    if item.config.getoption("--check-stubs") and _in_katas(item) and report.when == "call":
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
