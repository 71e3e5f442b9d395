"""The kata plugin's record and summary: the learner's results kept in pytest's cache for
the status table, and the terminal summary. A learner's run (options.learner_view) tells
each failing task once and each race in a line; --solutions, CI and -v keep pytest's
report of every test and the performance section with the instructor's lines."""

from __future__ import annotations

import re
import time
from collections.abc import Generator
from typing import Any

import pytest

from xtc_katas import ROOT
from xtc_katas.kata import progress
from xtc_katas.kata.manifest import find
from xtc_katas.measure import machine
from xtc_katas.plugin.options import BOUND, learner_view, parallel_run
from xtc_katas.plugin.reports import SAID, STUB


def pytest_configure(config: pytest.Config) -> None:
    """The record is the learner's: not for --solutions, not for --check-stubs, and kept
    by pytest-xdist's controller alone, which receives every worker's reports."""
    learner_run = not (config.getoption("--solutions") or config.getoption("--check-stubs"))
    if learner_run and not hasattr(config, "workerinput"):
        config.pluginmanager.register(ProgressRecorder(config), "xtc-katas-progress")


class ProgressRecorder:
    """Keeps the learner's results in pytest's own cache, for the status table."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.results: dict[str, progress.TestResult] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when != "call" and not (report.when == "setup" and report.failed):
            return
        bound = dict(report.user_properties).get(BOUND)
        if bound is None:  # not a kata test (options.bind binds every kata test)
            return
        kata = find(bound["kata"])
        text = said(report) if report.failed else ""  # its first line: the status's
        self.results[report.nodeid] = progress.TestResult(
            kata=kata.id,
            tasks=tuple(bound["tasks"]),
            backend=bound["backend"],
            outcome=report.outcome,
            module_hash=progress.module_hash(kata),
            perf=[v for k, v in report.user_properties if k == "perf"],
            when=time.time(),
            message=next((line for line in text.splitlines() if line.strip()), "")[:300],
        )

    def pytest_sessionfinish(self) -> None:
        if self.results and getattr(self.config, "cache", None) is not None:
            progress.record(self.config.cache, self.results)


@pytest.hookimpl(wrapper=True, tryfirst=True)  # around pytest's own summary
def pytest_terminal_summary(
    terminalreporter: Any, config: pytest.Config
) -> Generator[None, None, None]:
    """In a learner's run whose failures are all kata tests, pytest's FAILURES and ERRORS
    sections (a traceback per test and backend) give way to one block per failing task
    (tell_failing_tasks, below): the same reports, printed once per cause."""
    if learner_view(config) and config.option.tbstyle == "auto":
        failing = _failing(terminalreporter.stats)
        if failing and all(_bound(report) for report in failing):
            config.option.tbstyle = "no"
            config.stash[TELL] = failing
    return (yield)


#: The failed reports a learner's run tells by task (set by the wrapper above).
TELL = pytest.StashKey[list]()


@pytest.hookimpl(specname="pytest_terminal_summary")
def pytest_terminal_summary_told(terminalreporter: Any, config: pytest.Config) -> None:
    """The failing tasks (a learner's run), then the speed figures."""
    failing = config.stash.get(TELL, [])
    if failing:
        tell_failing_tasks(terminalreporter, failing)
    if parallel_run(config):  # the controller: its workers left the perf tests out
        terminalreporter.section("performance tests left out")
        terminalreporter.write_line(
            "perf tests do not run under pytest -n: another worker shares the cores, so "
            "side-by-side timings would measure it. Run them serially: pytest -m perf"
        )
    if learner_view(config):
        speed_lines(terminalreporter)
    else:
        performance_section(terminalreporter)


def _failing(stats: dict[str, list]) -> list[pytest.TestReport]:
    return [report for key in ("error", "failed") for report in stats.get(key, [])]


def _bound(report: Any) -> dict | None:
    return dict(getattr(report, "user_properties", [])).get(BOUND)


def said(report: pytest.TestReport) -> str:
    """What the learner is told of a failed report: the kata's words (reports.py), else
    pytest's one-line crash message (a plain assert's), never the test's source."""
    told = dict(report.user_properties).get(SAID)
    if told:
        return told
    crash = getattr(report.longrepr, "reprcrash", None)
    return crash.message if crash is not None else report.longreprtext


def _cause(text: str) -> str:
    """Two failures have the same cause when their words differ only in figures, in the
    backend they name and in an object's address (figures with their sign)."""
    figures = re.sub(r"0x[0-9a-f]+|-?\d+(\.\d+)?", "#", text)
    return re.sub(r"\b(mlir|tvm)\b", "*", figures, flags=re.I)


def _names_a_function(text: str) -> bool:
    """Words that name the kata's function they blame ("01_peak › matmul_fmas() ..."): the
    same words under another task's test are that function's fault. Words that name none
    (pytest's "DID NOT RAISE <class 'ValueError'>") are each task's own."""
    return re.search(r"› \w+\(", text) is not None


def _test_name(report: pytest.TestReport) -> str:
    return report.nodeid.split("::")[-1]


def tell_failing_tasks(terminalreporter: Any, failing: list[pytest.TestReport]) -> None:
    """One block per failing task: its first failure's words (figures, next step), then
    one line for its other tests and backends that failed the same way. A cause told
    once, by another task's block, is named in one line."""
    by_task: dict[tuple, list[pytest.TestReport]] = {}
    for report in failing:
        bound = _bound(report) or {}
        by_task.setdefault((bound["kata"], tuple(bound["tasks"])), []).append(report)
    write = terminalreporter.write_line
    n = len(by_task)
    terminalreporter.write_sep(
        "=",
        f"{n} failing task{'s' if n > 1 else ''} (pytest -v: every test, with its traceback)",
        red=True,
    )
    shown: dict[Any, str] = {}  # a cause (with its task, if it names no function) -> the task
    stubs = 0  # untouched stubs: the first told in full, the next in a line each
    for (kata_id, tasks), reports in by_task.items():
        label = f"{kata_id} › {', '.join(f'{t}()' for t in tasks) or _test_name(reports[0])}"
        if all(dict(r.user_properties).get(STUB) for r in reports):
            stubs += 1
            if stubs > 1:
                hint = f"xtc-katas hint {find(kata_id).number} {' '.join(tasks)}"
                write(f"{said(reports[0]).splitlines()[0]}   (its hint: {hint})")
                continue
        causes: dict[str, list[pytest.TestReport]] = {}
        for report in reports:
            cause = _cause(said(report))
            # One test on two backends whose first lines agree failed for one cause, whatever
            # the lines after them (a note on one backend's step that did not pay).
            cause = next(
                (
                    told
                    for told, same in causes.items()
                    if _on_any_backend(same[0]) == _on_any_backend(report)
                    and told.splitlines()[:1] == cause.splitlines()[:1]
                ),
                cause,
            )
            causes.setdefault(cause, []).append(report)
        told = []
        for number, (cause, same) in enumerate(causes.items()):
            first = same[0]
            key = cause if _names_a_function(said(first)) else (label, cause)
            if key in shown:
                write(f"{label}: {_test_name(first)} fails for the same cause as {shown[key]}")
                continue
            shown[key] = label
            if number == 0:
                terminalreporter.write_sep("_", f"{label}: {_test_name(first)}", red=True)
            else:
                write(f"and {_test_name(first)}, for another cause:")
            told.append(said(first))
            write(told[-1])
            also = _also(first, same[1:])
            if also:
                write(f"  {also}")
        if told and not any("next:" in text or "then run:" in text for text in told):
            write(f"  next: {_next_step(kata_id, tasks)}")


def _next_step(kata_id: str, tasks: tuple[str, ...]) -> str:
    kata = find(kata_id)
    stub = kata.stub_path().relative_to(ROOT)
    only = f" -k {tasks[0]}" if len(tasks) == 1 else ""
    return f"fix it in {stub}, then run: pytest katas/{kata.id}{only}"


def _also(first: pytest.TestReport, others: list[pytest.TestReport]) -> str:
    """ "also on tvm; 2 more tests of this task fail for the same cause"."""
    backend = (_bound(first) or {}).get("backend", "")
    backends = sorted({(_bound(r) or {}).get("backend", "") for r in others} - {"", backend})
    tests = {_on_any_backend(r) for r in others} - {_on_any_backend(first)}
    parts = [f"also on {', '.join(backends)}"] if backends else []
    if tests:
        n = len(tests)
        parts.append(f"{n} more test{'s' if n > 1 else ''} of this task fail{'s' * (n == 1)}")
        parts[-1] += " for the same cause"
    elif parts:
        parts[-1] += ", for the same cause"
    return "; ".join(parts)


def _on_any_backend(report: pytest.TestReport) -> tuple[str, str]:
    """A test, its backend left out: (its function, its other parameters' ids)."""
    name, _, ids = _test_name(report).partition("[")
    backend = (_bound(report) or {}).get("backend", "")
    return name, "-".join(part for part in ids.rstrip("]").split("-") if part != backend)


def speed_lines(terminalreporter: Any) -> None:
    """A learner's summary of a run's figures. A race (yours, the reference, the bar) in
    one line, and a step that did not pay in one line where the verdict rests on it
    (yours below the previous step's bar), with this run's figures; other figures (kata
    03's % of peak, kata 12's race on a cost model) in one line each, under a header that
    claims no speed."""
    from xtc_katas.checks.speed_rule import ABOVE_PREVIOUS

    races, others = [], []
    # A task that failed a test on a backend (its numerics, its shape) has no speed there
    # worth a line: kata 09 on MLIR read 1.16x with 75% of its outputs NaN.
    failed = {
        (bound["kata"], tuple(bound["tasks"]), bound.get("backend", ""))
        for report in terminalreporter.stats.get("failed", [])
        if (bound := _bound(report))
    }
    for report in terminalreporter.stats.get("passed", []):
        bound = _bound(report)
        if getattr(report, "when", None) != "call" or not bound:
            continue
        if (bound["kata"], tuple(bound["tasks"]), bound.get("backend", "")) in failed:
            continue
        given = report.nodeid.split("[")[-1].rstrip("]") if "[" in report.nodeid else ""
        name = f"{', '.join(bound['tasks']) or _test_name(report)}" + (f" [{given}]" * bool(given))
        for key, figures in report.user_properties:
            if key != "perf":
                continue
            if not {"speedup", "reference_speedup", "bar"} <= figures.keys():
                shown = {k: v for k, v in figures.items() if k not in NOTES}
                others.append(
                    f"{name}: " + ", ".join(f"{k} {_fmt(k, v)}" for k, v in shown.items())
                )
                continue
            over = figures.get("over", "naive")
            line = (
                f"{name}: yours {figures['speedup']:.3g}x, reference "
                f"{figures['reference_speedup']:.3g}x, bar {figures['bar']:.3g}x"
                + ("" if over == "naive" else f" (each over {over})")
            )
            previous = figures.get("previous_speedup")
            if figures.get("step") and previous and figures["speedup"] < ABOVE_PREVIOUS * previous:
                line += (
                    f"\n    the step did not pay in this run (its reference "
                    f"{figures['reference_speedup']:.3g}x, the previous step's {previous:.3g}x): "
                    "the bar follows the reference"
                )
            if figures.get("noisy"):  # a figure that moved with the machine (issue 59)
                line += f"\n    {figures['noisy']}"
            races.append(line)
    if races:
        terminalreporter.write_sep(
            "=", "speed in this run (yours, the reference, the bar: over naive, or as a line says)"
        )
        terminalreporter.write_line(f"measured on {machine.describe()}")
    elif others:
        terminalreporter.write_sep("=", "figures of this run")
    for line in sorted(races) + sorted(others):
        terminalreporter.write_line(line)


#: A race's recorded figures that are sentences (speed_judge.judge_speed): printed as
#: notes under its line, not as "key value".
NOTES = ("step", "close", "noisy")


def performance_section(terminalreporter: Any) -> None:
    """Every figure every test recorded, with the calibration and peak lines: what
    --solutions, CI and -v print."""
    lines = []
    for reports in terminalreporter.stats.values():
        for report in reports:
            if getattr(report, "when", None) != "call":
                continue
            for key, figures in getattr(report, "user_properties", []):
                if key == "perf":
                    notes = [figures[k] for k in NOTES if k in figures]
                    numbers = {k: v for k, v in figures.items() if k not in NOTES}
                    shown = ", ".join(f"{k} {_fmt(k, v)}" for k, v in numbers.items())
                    line = f"{report.nodeid}: {shown}"
                    line += "".join(f"\n    note: {note}" for note in notes)
                    lines.append(line)
    if lines:
        terminalreporter.section("performance (side by side: the median of each round's ratio)")
        terminalreporter.write_line(f"measured on {machine.describe()}")
        terminalreporter.write_line(machine.calibration_line())
        from xtc_katas.measure import machine_peak

        for line in machine_peak.summary_lines():
            terminalreporter.write_line(
                f"{line} (XTC's own evaluate_flops beside it: python -m "
                "xtc_katas.measure.machine_peak)"
            )
        for line in sorted(lines):
            terminalreporter.write_line(line)


def _fmt(key: str, value: Any) -> str:
    if key.startswith("percent") and isinstance(value, (int, float)):
        from xtc_katas.measure.timing import format_percent

        return format_percent(value)
    return f"{value:.3g}" if isinstance(value, float) else str(value)
