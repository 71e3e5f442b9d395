"""The kata plugin's fixtures: the kata and the learner's module under test, the task,
the backend's work dir, the peak, the speed judge, and the record of figures."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from xtc_katas import ROOT
from xtc_katas.checks import integrity
from xtc_katas.checks.race_against_numpy import assert_keeps_up_with_numpy
from xtc_katas.checks.speed_judge import SpeedJudge
from xtc_katas.checks.task_under_test import TaskUnderTest
from xtc_katas.kata import loader
from xtc_katas.kata.manifest import Kata, kata_of_path
from xtc_katas.measure.backends import KataBackend
from xtc_katas.measure.workdir import Workdir
from xtc_katas.plugin.binding import LEARNER_MODULE


def _kata_for(request: pytest.FixtureRequest) -> Kata:
    kata = kata_of_path(Path(request.path))
    if kata is None:
        pytest.fail(f"{request.path} is not inside a kata folder listed in katas/manifest.toml")
    return kata


@pytest.fixture(scope="module")
def kata_entry(request: pytest.FixtureRequest) -> Kata:
    """The manifest entry of the kata whose tests are running."""
    return _kata_for(request)


@pytest.fixture(scope="module", name=LEARNER_MODULE)
def learner_module(kata_entry: Kata) -> ModuleType:
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


@pytest.fixture
def speed_judge(
    kata_entry: Kata,
    backend: KataBackend,
    workdir: Workdir,
    peak: Callable[[], float],
    record_perf: PerfRecord,
) -> SpeedJudge:
    """Race the learner's compiled kernel against naive, the reference and the previous
    task's reference, in one run on this machine; assert the bar (speed_rule.py)."""
    from xtc_katas.measure.machine_peak import reprobe

    return SpeedJudge(kata_entry, backend, workdir, peak, record_perf, reprobe)


@pytest.fixture
def task(
    request: pytest.FixtureRequest,
    kata_entry: Kata,
    learner_module: ModuleType,
    backend: KataBackend,
    workdir: Workdir,
    speed_judge: SpeedJudge,
) -> TaskUnderTest:
    """The task named by the test's `@pytest.mark.task("function")`: its compiled kernel,
    loop nest, numerics, shape and speed judgements on the manifest's problem."""
    marker = request.node.get_closest_marker("task")
    if marker is None or len(marker.args) != 1:
        pytest.fail(f'{request.node.name} uses `task`: mark it @pytest.mark.task("function")')
    entry = kata_entry.task(marker.args[0])
    if entry is None:
        pytest.fail(f"{kata_entry.id} has no task {marker.args[0]!r} (katas/manifest.toml)")
    return TaskUnderTest(
        kata_entry,
        entry,
        learner_module,
        backend,
        workdir,
        speed_judge,
        assert_keeps_up_with_numpy,
        request.getfixturevalue,
    )
