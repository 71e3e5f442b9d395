"""The kata plugin's options and collection: --solutions, --backend, --check-stubs; each
kata test bound to its kata and tasks (in its stash) and parametrized by backend; perf
tests left out under pytest -n."""

from __future__ import annotations

import os

import pytest

from xtc_katas.kata import loader
from xtc_katas.measure import machine
from xtc_katas.measure.backends import BACKENDS, KataBackend, set_thread_defaults
from xtc_katas.plugin.binding import bind_tasks, parallel_run
from xtc_katas.plugin.summary import ProgressRecorder

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
    machine.remember_cpu_reading()  # before anything imports XTC
    set_thread_defaults()
    machine.emulate_cpu_info()
    learner_run = not (config.getoption("--solutions") or config.getoption("--check-stubs"))
    if learner_run and not hasattr(config, "workerinput"):
        config.pluginmanager.register(ProgressRecorder(config), "xtc-katas-progress")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Bind each kata test to its tasks; under pytest -n, leave out the perf tests.

    A perf test times kernels side by side; with another worker compiling and running
    on the other core, its figures would measure the neighbour, not the schedule. They
    run serially: `pytest -m perf` (without -n), and the summary says so.
    """
    for item in items:
        bind_tasks(item)
    if not parallel_run(config):
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
