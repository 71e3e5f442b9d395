"""The kata plugin's fixtures: the kata and the learner's module under test, the task,
the backend's work dir, the peak, and the record of figures."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from xtc_katas import ROOT
from xtc_katas.checks.learner import Learner
from xtc_katas.checks.task_under_test import TaskUnderTest
from xtc_katas.kata import loader
from xtc_katas.kata.manifest import Kata, kata_of_path
from xtc_katas.measure.backends import KataBackend
from xtc_katas.measure.workdir import Workdir
from xtc_katas.plugin.options import LEARNER_MODULE


@pytest.fixture(scope="module")
def kata_entry(request: pytest.FixtureRequest) -> Kata:
    """The manifest entry of the kata whose tests are running."""
    kata = kata_of_path(Path(request.path))
    if kata is None:
        pytest.fail(f"{request.path} is not inside a kata folder listed in katas/manifest.toml")
    return kata


@pytest.fixture(scope="module", name=LEARNER_MODULE)
def learner_module(kata_entry: Kata) -> Iterator[Learner]:
    """The module under test, the learner's stub (or with --solutions the reference),
    behind a process boundary: it is imported, and its functions run, in a worker process
    (checks/learner.py); `learner_module.f(*args)` returns what f returned there."""
    path = loader.module_path(kata_entry)
    try:
        learner = Learner(kata_entry)
    except Exception as exc:
        pytest.fail(
            f"{kata_entry.id}: {path.relative_to(ROOT)} does not import: "
            f"{type(exc).__name__}: {exc}\n  Fix that file, then run: pytest katas/{kata_entry.id}",
            pytrace=False,
        )
    with learner:
        yield learner


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Workdir:
    """A private directory for this test's compiles, also its working directory: TVM
    leaves ./tmpXXXX/ behind, and fresh names per compile avoid XTC's reused-dump_file
    trap."""
    monkeypatch.chdir(tmp_path)
    return Workdir(tmp_path)


@pytest.fixture(scope="session")
def peak() -> Callable[[], float]:
    """Single-core float32 FMA/s, as a function measured on first call, once per session:
    an unsolved kata fails before paying ~0.5 s for a peak it never uses
    (machine_peak.py; XTC_KATAS_PEAK_GFMAS overrides it)."""
    from xtc_katas.measure.machine_peak import peak_fmas_per_s

    return peak_fmas_per_s


@pytest.fixture
def record_perf(request: pytest.FixtureRequest) -> Callable[..., None]:
    """Record figures (speedup, percent_of_peak, ...) for the summary and the status table."""
    return lambda **figures: request.node.user_properties.append(
        ("perf", {name: _figure(value) for name, value in figures.items()})
    )


#: A figure's text, and a table of figures (a search's figure per candidate), are cut here.
FIGURE_TEXT, FIGURE_ENTRIES = 200, 64


def _figure(value: object, inner: bool = False) -> object:
    """A figure as the record keeps it: a number, a short text, or one table of them.
    Some figures are what the learner's function returned, which may be anything: a
    `percent_of_peak_of` returning 7.25 million nested lists made a 281 MB grading.json and
    put the grader at 2.25 GB (outside red team, round 3). Anything else is its type's name."""
    if value is None or isinstance(value, (bool, float)):
        return value
    if isinstance(value, int):
        return value if abs(value) < 1 << 63 else f"<int of {value.bit_length()} bits>"
    if isinstance(value, str):
        return value[:FIGURE_TEXT]
    if isinstance(value, dict) and not inner:
        entries = list(value.items())[:FIGURE_ENTRIES]
        return {str(name)[:FIGURE_TEXT]: _figure(figure, inner=True) for name, figure in entries}
    return f"<{type(value).__name__}>"


@pytest.fixture
def task(
    request: pytest.FixtureRequest,
    kata_entry: Kata,
    learner_module: Learner,
    backend: KataBackend,
    workdir: Workdir,
    peak: Callable[[], float],
    record_perf: Callable[..., None],
) -> TaskUnderTest:
    """The task named by the test's `@pytest.mark.task("function")`: its compiled kernel,
    loop nest, numerics, shape and speed judgements on the manifest's problem."""
    marker = request.node.get_closest_marker("task")
    if marker is None or len(marker.args) != 1:
        pytest.fail(f'{request.node.name} uses `task`: mark it @pytest.mark.task("function")')
    entry = kata_entry.task(marker.args[0])
    if entry is None:
        pytest.fail(f"{kata_entry.id} has no task {marker.args[0]!r} (katas/manifest.toml)")
    from xtc_katas.measure.machine_peak import reprobe

    return TaskUnderTest(
        kata_entry, entry, learner_module, backend, workdir, peak, record_perf, reprobe
    )
