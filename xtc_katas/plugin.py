"""The pytest plugin behind every kata: options, fixtures and friendly reports.

Options: --solutions (test solutions/ instead of katas/), --backend mlir|tvm (one
backend for a faster loop), --check-stubs (CI: every kata test must FAIL on the
untouched stubs, with the stub's NotImplementedError).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from xtc_katas import ROOT
from xtc_katas.checks import integrity
from xtc_katas.checks.speed_race import SpeedCheck
from xtc_katas.checks.task_under_test import TaskUnderTest
from xtc_katas.kata import failures, loader, progress, stubs
from xtc_katas.kata.manifest import Kata, find, kata_of_path
from xtc_katas.measure import machine
from xtc_katas.measure.backends import BACKENDS, KataBackend, set_thread_defaults
from xtc_katas.measure.workdir import Workdir

BACKEND_ENV = "XTC_KATAS_BACKEND"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("xtc-katas")
    group.addoption(
        "--solutions",
        action="store_true",
        default=loader.solutions_selected(),
        help=f"test the reference solutions in solutions/ (or set {loader.SOLUTIONS_ENV}=1)",
    )
    group.addoption(
        "--backend",
        action="append",
        choices=BACKENDS,
        help=f"run compiling tests on this backend only (repeatable; or set {BACKEND_ENV})",
    )
    group.addoption(
        "--check-stubs",
        action="store_true",
        help="CI: pass only if every kata test fails on the untouched stub",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "task(function): the kata task a test checks (its `task` fixture); without it, "
        "the task whose function the test's name contains",
    )
    if config.getoption("--solutions"):
        os.environ[loader.SOLUTIONS_ENV] = "1"
    set_thread_defaults()
    machine.emulate_cpu_info()
    learner_run = not (config.getoption("--solutions") or config.getoption("--check-stubs"))
    if learner_run and not hasattr(config, "workerinput"):
        config.pluginmanager.register(ProgressRecorder(config), "xtc-katas-progress")


def _parallel_run(config: pytest.Config) -> bool:
    """Under pytest-xdist (-n N): in the controller and in every worker."""
    return bool(getattr(config.option, "numprocesses", None)) or hasattr(config, "workerinput")


TASKS = pytest.StashKey[tuple[str, ...]]()
#: The kata a test belongs to, found once at collection (None: not a kata test).
KATA = pytest.StashKey["Kata | None"]()
#: The user property a report carries its test's kata, tasks and backend in.
BOUND = "xtc-katas-bound"


def kata_of(item: pytest.Item) -> Kata | None:
    """The kata whose folder holds the test (katas/NN_x/ or solutions/NN_x/), found once
    at collection and kept in the item's stash; None for any other test."""
    if KATA not in item.stash:
        item.stash[KATA] = kata_of_path(Path(item.path))
    return item.stash[KATA]


def bound_tasks(item: pytest.Item) -> tuple[str, ...]:
    """The kata functions a test checks, decided once at collection: the `task` marker's
    if it has one, else those its name contains (the contract tests/test_manifest.py
    keeps). The stub checks, the progress record and the status table read this."""
    return item.stash.get(TASKS, ())


def _bind_tasks(item: pytest.Item) -> None:
    kata = kata_of(item)
    if kata is None:
        return
    marker = item.get_closest_marker("task")
    if marker is not None:
        item.stash[TASKS] = tuple(marker.args)
    else:
        name = getattr(item, "originalname", item.name)
        item.stash[TASKS] = tuple(stubs.functions_checked_by(kata, name))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Bind each kata test to its tasks; under pytest -n, leave out the perf tests.

    A perf test times kernels side by side; with another worker compiling and running
    on the other core, its figures would measure the neighbour, not the schedule. They
    run serially: `pytest -m perf` (without -n), and the summary says so.
    """
    for item in items:
        _bind_tasks(item)
    if not _parallel_run(config):
        return
    perf = [item for item in items if item.get_closest_marker("perf")]
    if perf:
        items[:] = [item for item in items if not item.get_closest_marker("perf")]
        config.hook.pytest_deselected(items=perf)


def selected_backends(config: pytest.Config) -> list[str]:
    chosen = config.getoption("--backend") or []
    if not chosen and os.environ.get(BACKEND_ENV):
        chosen = [b.strip() for b in os.environ[BACKEND_ENV].split(",")]
    return [b for b in BACKENDS if b in chosen] or list(BACKENDS)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "backend" in metafunc.fixturenames:
        names = selected_backends(metafunc.config)
        metafunc.parametrize("backend", [KataBackend(n) for n in names], ids=names, indirect=True)


@pytest.fixture
def backend(request: pytest.FixtureRequest) -> KataBackend:
    """The code generator a test runs on: MLIR and TVM, one test id each ([mlir], [tvm]).

    --backend or XTC_KATAS_BACKEND picks one, for a faster loop.
    """
    return request.param


# --- fixtures -------------------------------------------------------------------------


def _kata_for(request: pytest.FixtureRequest) -> Kata:
    kata = kata_of_path(Path(request.path))
    if kata is None:
        pytest.fail(f"{request.path} is not inside a kata folder listed in katas/manifest.toml")
    return kata


@pytest.fixture(scope="module")
def kata_entry(request: pytest.FixtureRequest) -> Kata:
    """The manifest entry of the kata whose tests are running."""
    return _kata_for(request)


@pytest.fixture(scope="module")
def kata(kata_entry: Kata) -> ModuleType:
    """The module under test: the learner's stub, or with --solutions the reference.

    Imported after the harness's judges were recorded (checks/integrity.py), and
    checked against that record once imported and after each of its tests."""
    path = loader.module_path(kata_entry)
    integrity.watch()
    try:
        module = loader.load(kata_entry)
    except Exception as exc:
        pytest.fail(
            f"{kata_entry.id}: {path.relative_to(ROOT)} does not import: "
            f"{type(exc).__name__}: {exc}\n  Fix that file, then run: pytest katas/{kata_entry.id}",
            pytrace=False,
        )
    integrity.verify(f"{kata_entry.id}: importing {path.name}")
    return module


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Workdir:
    """A private directory for this test's compiles, also its working directory.

    TVM leaves ./tmpXXXX/ behind; compiling here keeps the repository and the user's cwd
    clean, and the fresh names per compile avoid XTC's reused-dump_file trap.
    """
    monkeypatch.chdir(tmp_path)
    return Workdir(tmp_path)


@pytest.fixture(scope="session")
def peak() -> Callable[[], float]:
    """Single-core float32 FMA/s, as a function measured on first call, once per session.

    Lazy on purpose: a test calls the learner's code first, so an unsolved kata fails in
    milliseconds instead of paying ~0.5 s for a peak it never uses (machine_peak.py: the
    harness's register FMA probe, not XTC's evaluate_flops).
    Override with XTC_KATAS_PEAK_GFMAS.
    """
    from xtc_katas.measure.machine_peak import peak_fmas_per_s

    return peak_fmas_per_s


class PerfRecord:
    """Performance figures of one test, shown in the summary and kept for `xtc-katas`."""

    def __init__(self, item: pytest.Item) -> None:
        self._item = item

    def __call__(self, **figures: Any) -> None:
        self._item.user_properties.append(("perf", figures))


@pytest.fixture
def record_perf(request: pytest.FixtureRequest) -> PerfRecord:
    """Record figures (speedup, percent_of_peak, ...) for the summary and the status table."""
    return PerfRecord(request.node)


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
        if kata is not None and "kata" in getattr(item, "funcargs", {}):
            integrity.verify(f"{kata.id} › {item.name}")


@pytest.hookimpl(tryfirst=True, specname="pytest_runtest_call")
def pytest_runtest_call_stub_first(item: pytest.Item) -> None:
    """Fail at once, before any costly setup in the test body, on an untouched stub or a
    function the learner's module lacks (renamed or deleted)."""
    module = getattr(item, "funcargs", {}).get("kata")
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


@pytest.fixture
def speed_check(
    kata_entry: Kata,
    backend: KataBackend,
    workdir: Workdir,
    peak: Callable[[], float],
    record_perf: PerfRecord,
) -> SpeedCheck:
    """Race the learner's compiled kernel against naive, the reference and the previous
    task's reference, in one run on this machine; assert the bar (speed_rule.py)."""
    return SpeedCheck(kata_entry, backend, workdir, peak, record_perf)


@pytest.fixture
def task(
    request: pytest.FixtureRequest,
    kata_entry: Kata,
    kata: ModuleType,
    backend: KataBackend,
    workdir: Workdir,
    speed_check: SpeedCheck,
) -> TaskUnderTest:
    """The task named by the test's `@pytest.mark.task("function")`: its compiled kernel,
    loop nest, numerics, shape and speed checks on the manifest's problem."""
    marker = request.node.get_closest_marker("task")
    if marker is None or len(marker.args) != 1:
        pytest.fail(f'{request.node.name} uses `task`: mark it @pytest.mark.task("function")')
    entry = kata_entry.task(marker.args[0])
    if entry is None:
        pytest.fail(f"{kata_entry.id} has no task {marker.args[0]!r} (katas/manifest.toml)")
    return TaskUnderTest(kata_entry, entry, kata, backend, workdir, speed_check)


# --- reports ----------------------------------------------------------------------------


def _in_katas(item: pytest.Item) -> bool:
    return Path(item.path).resolve().is_relative_to(ROOT / "katas")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Iterator[None] | Any:
    report = yield
    kata = kata_of(item)
    if kata is None:
        return report
    described = None
    if call.excinfo is not None:
        exc = call.excinfo.value
        described = failures.describe(kata, exc, call.excinfo.tb)
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


class ProgressRecorder:
    """Keeps the learner's results in pytest's own cache, for the status table.

    Registered only for learner runs (not --solutions, not --check-stubs) and only in
    the controlling process under pytest-xdist, which receives every worker's reports.
    """

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.results: dict[str, progress.TestResult] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when != "call" and not (report.when == "setup" and report.failed):
            return
        bound = dict(report.user_properties).get(BOUND)
        if bound is None:  # not a kata test (pytest_runtest_setup binds every kata test)
            return
        kata = find(bound["kata"])
        self.results[report.nodeid] = progress.TestResult(
            kata=kata.id,
            tasks=tuple(bound.get("tasks", ())),
            backend=bound.get("backend", ""),
            outcome=report.outcome,
            module_hash=progress.module_hash(kata),
            perf=[v for k, v in report.user_properties if k == "perf"],
            when=time.time(),
            message=_first_line(report) if report.failed else "",
        )

    def pytest_sessionfinish(self) -> None:
        cache = getattr(self.config, "cache", None)
        if not self.results or cache is None:
            return
        progress.record(cache, self.results)


def _first_line(report: pytest.TestReport) -> str:
    text = str(report.longrepr or "")
    return next((line for line in text.splitlines() if line.strip()), "")[:300]


def pytest_terminal_summary(terminalreporter: Any) -> None:
    config = terminalreporter.config
    if _parallel_run(config):  # the controller: its workers left the perf tests out
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
                    numbers = {k: v for k, v in figures.items() if k != "step"}
                    shown = ", ".join(f"{k} {_fmt(k, v)}" for k, v in numbers.items())
                    line = f"{report.nodeid}: {shown}"
                    if "step" in figures:  # the step did not pay in this run (speed_rule)
                        line += f"\n    note: {figures['step']}"
                    lines.append(line)
    if lines:
        terminalreporter.section("performance (side by side, min of repeats)")
        terminalreporter.write_line(f"measured on {machine.describe()}")
        terminalreporter.write_line(machine.lesson_rows_line())
        from xtc_katas.measure import machine_peak

        for line in machine_peak.summary_lines(compare=False):
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
