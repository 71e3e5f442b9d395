"""The kata plugin's record and summary: the learner's results kept in pytest's cache for
the status table, and the performance section of the terminal summary."""

from __future__ import annotations

import time
from typing import Any

import pytest

from xtc_katas.kata import progress
from xtc_katas.kata.manifest import find
from xtc_katas.measure import machine
from xtc_katas.plugin.options import BOUND, parallel_run


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
        text = str(report.longrepr or "") if report.failed else ""
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


def pytest_terminal_summary(terminalreporter: Any) -> None:
    config = terminalreporter.config
    if parallel_run(config):  # the controller: its workers left the perf tests out
        terminalreporter.section("performance tests left out")
        terminalreporter.write_line(
            "perf tests do not run under pytest -n: another worker shares the cores, so "
            "side-by-side timings would measure it. Run them serially: pytest -m perf"
        )
    lines = []
    for reports in terminalreporter.stats.values():
        for report in reports:
            if getattr(report, "when", None) != "call":
                continue
            for key, figures in getattr(report, "user_properties", []):
                if key == "perf":
                    notes = [figures[k] for k in ("step", "close") if k in figures]
                    numbers = {k: v for k, v in figures.items() if k not in ("step", "close")}
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
