"""The kata plugin's options and collection: --solutions, --backend, --check-stubs; each
kata test bound, once, to its kata, tasks and backend (in its stash, and in a user
property its reports carry to pytest-xdist's controller too) and parametrized by
backend; perf tests left out under pytest -n."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from xtc_katas.kata import loader, stubs
from xtc_katas.kata.manifest import Kata, kata_of_path
from xtc_katas.measure import isolation, machine
from xtc_katas.measure.backends import (
    BACKENDS,
    KataBackend,
    import_backends,
    set_thread_defaults,
)

BACKEND_ENV = "XTC_KATAS_BACKEND"
#: The fixture of the module under test (fixtures.py): a test that asks for it is a test
#: of the learner's module, checked stub first (reports.py).
LEARNER_MODULE = "learner_module"
#: The user property a report carries its test's kata, tasks and backend in.
BOUND = "xtc-katas-bound"
#: A test's kata (None: not a kata test) and the functions it checks, in its stash: the
#: stub checks, the progress record and the status table read these.
KATA = pytest.StashKey[Kata | None]()
TASKS = pytest.StashKey[tuple[str, ...]]()


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


def learner_view(config: pytest.Config) -> bool:
    """A learner's run: it prints what the learner asked for, each failing task once
    (plugin/summary.py) and a short speed line per race, without pytest's and its
    plugins' headers (pytest-benchmark's, pytest-timeout's) or the instructor's lines
    (calibration, the peak probe's internals). Those show under --solutions,
    --check-stubs, -v, and in CI (CI=true, as CI services set it)."""
    instructor = config.getoption("--solutions") or config.getoption("--check-stubs")
    in_ci = os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")
    return not (instructor or in_ci or config.get_verbosity() > 0)


def _asked_for_report_chars(config: pytest.Config) -> bool:
    """Whether the command line (or PYTEST_ADDOPTS) gave pytest's -r option."""
    given = [*config.invocation_params.args, *os.environ.get("PYTEST_ADDOPTS", "").split()]
    return any(str(arg).startswith(("-r", "--report-chars")) for arg in given)


@pytest.hookimpl(tryfirst=True)  # before pytest's terminal reporter reads -r
def pytest_configure(config: pytest.Config) -> None:
    if learner_view(config):
        config.option.no_header = True
        if not _asked_for_report_chars(config):  # no FAILED line per test: summary.py
            config.option.reportchars = ""  # tells each failing task once
    config.addinivalue_line(
        "markers",
        "task(function): the kata task a test checks, which its `task` fixture needs (the "
        "stub checks, without it, read the task from the test's name)",
    )
    if config.getoption("--solutions"):
        os.environ[loader.SOLUTIONS_ENV] = "1"
    if config.getoption("--check-stubs"):  # a stub's failure needs no smallest example
        from hypothesis import Phase, settings

        settings.register_profile("stubs", phases=(Phase.explicit, Phase.reuse, Phase.generate))
        settings.load_profile("stubs")
    machine.remember_cpu_reading()  # before anything imports XTC
    set_thread_defaults()
    machine.emulate_cpu_info()


def parallel_run(config: pytest.Config) -> bool:
    """Under pytest-xdist (-n N): in the controller and in every worker."""
    return bool(getattr(config.option, "numprocesses", None)) or hasattr(config, "workerinput")


def bind(item: pytest.Item) -> None:
    """A kata test's tasks: its `task` marker's if it has one, else those its name
    contains (the contract tests/test_manifest.py keeps)."""
    kata = item.stash[KATA] = kata_of_path(Path(item.path))
    if kata is None:
        return
    marker = item.get_closest_marker("task")
    name = getattr(item, "originalname", item.name)
    tasks = tuple(marker.args) if marker else tuple(stubs.functions_checked_by(kata, name))
    item.stash[TASKS] = tasks
    callspec = getattr(item, "callspec", None)
    backend = getattr(callspec.params.get("backend") if callspec else None, "name", "")
    item.user_properties.append((BOUND, {"kata": kata.id, "tasks": tasks, "backend": backend}))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Bind each kata test; under pytest -n, leave out the perf tests.

    A perf test times kernels side by side; with another worker compiling and running
    on the other core, its figures would measure the neighbour, not the schedule. They
    run serially: `pytest -m perf` (without -n), and the summary says so.
    """
    for item in items:
        bind(item)
    perf = [item for item in items if item.get_closest_marker("perf")]
    if perf and parallel_run(config):
        items[:] = [item for item in items if not item.get_closest_marker("perf")]
        config.hook.pytest_deselected(items=perf)


def pytest_collection_finish(session: pytest.Session) -> None:
    """Start the learner's workers' forkserver (a fresh interpreter), with the backends
    the selected tests compile on imported once there, and this process's own imports of
    them in a thread: both go on while the first tests start, and the first worker's
    start no longer waits for this process's imports.

    Only for tests that run the learner's code: one that stops at an untouched stub
    (reports.py) starts no worker, and a red run, which imported no backend (TVM's costs
    ~1.3 s), waited for the forkserver's imports (its output is the run's) to end."""
    if session.config.getoption("--check-stubs"):
        return
    untouched: dict[str, frozenset[str]] = {}
    used, running = set(), False
    for item in session.items:
        kata = item.stash.get(KATA, None)
        if kata is not None and LEARNER_MODULE in getattr(item, "fixturenames", ()):
            if kata.id not in untouched:
                untouched[kata.id] = _untouched(kata)
            if untouched[kata.id] & set(item.stash.get(TASKS, ())):
                continue
        running = True
        backend = getattr(getattr(item, "callspec", None), "params", {}).get("backend")
        if isinstance(backend, KataBackend):
            used.add(backend.name)
    if running:
        isolation.start_fresh_workers(sorted(used))
        isolation.in_background(import_backends, sorted(used))


def _untouched(kata: Kata) -> frozenset[str]:
    """The functions of the kata's module still the stub's (read, not run)."""
    try:
        return stubs.Loaded.read(loader.module_path(kata)).untouched
    except (OSError, SyntaxError, ValueError):  # its tests say what is wrong with it
        return frozenset()


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "backend" in metafunc.fixturenames:
        given = os.environ.get(BACKEND_ENV, "")
        chosen = metafunc.config.getoption("--backend") or [b.strip() for b in given.split(",")]
        names = [b for b in BACKENDS if b in chosen] or list(BACKENDS)
        metafunc.parametrize("backend", [KataBackend(n) for n in names], ids=names, indirect=True)


@pytest.fixture
def backend(request: pytest.FixtureRequest) -> KataBackend:
    """The code generator a test runs on, [mlir] and [tvm] (--backend or XTC_KATAS_BACKEND
    picks one, for a faster loop)."""
    return request.param
