"""The on-disk cache of unchanging kernels (module_cache.py) never hands out a stale module.

A hit must skip the compile, load from a path no module of the process used before, and
compute the problem; a changed solution, XTC version, CPU or ISA must miss; a damaged
entry must be compiled again. `backend` is the plugin's fixture: MLIR and TVM.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from xtc_katas import ROOT
from xtc_katas.checks.learner import Learner
from xtc_katas.checks.task_under_test import TaskUnderTest
from xtc_katas.kata.manifest import find
from xtc_katas.kata.problems import TUTORIAL
from xtc_katas.measure import backends, machine, module_cache, numerics
from xtc_katas.measure.workdir import Workdir

KATA = find(4)
FUNCTION = "schedule_register_tile"


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """An empty cache, and a repository copy whose sources the keys hash."""
    root = tmp_path / "repo"
    for part in module_cache.SOURCES:
        shutil.copytree(ROOT / part, root / part, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(module_cache, "ROOT", root)
    monkeypatch.setenv(module_cache.DIR_ENV, str(tmp_path / "cache"))
    monkeypatch.delenv(module_cache.ENABLED_ENV, raising=False)
    return root


class Compiles:
    """Counts the real compiles of a Workdir (a hit makes none)."""

    def __init__(self, workdir: Workdir, monkeypatch) -> None:
        self.count = 0
        real = workdir._compile

        def counted(*args, **kwargs):
            self.count += 1
            return real(*args, **kwargs)

        monkeypatch.setattr(workdir, "_compile", counted)


def reference_task(workdir, backend):
    """The reference of FUNCTION, loaded afresh (an edited solution is read again)."""
    learner = Learner(KATA, solution=True, local=True)
    return TaskUnderTest(KATA, KATA.task(FUNCTION), learner, backend, workdir, problem=TUTORIAL)


def reference(workdir, backend):
    """The reference compiled as a race compiles it, not memoized for the session."""
    task = reference_task(workdir, backend)
    return task.compile(task.scheduled(), FUNCTION)


def test_a_hit_skips_the_compile_and_loads_a_fresh_file_that_computes(
    cache, tmp_path, monkeypatch, backend
):
    workdir = Workdir(tmp_path)
    compiles = Compiles(workdir, monkeypatch)
    first = reference(workdir, backend)
    second = reference(workdir, backend)
    naive = [reference_task(workdir, backend).naive() for _ in range(2)]
    assert compiles.count == 2  # the reference once, naive once
    paths = {m.file_name for m in (first, second, *naive)}
    assert len(paths) == 4 and all(Path(p).parent == tmp_path for p in paths)
    numerics.assert_computes(second, TUTORIAL, backend.name, ("random", "edge"))
    numerics.assert_computes(naive[1], TUTORIAL, backend.name, ("random",))


def test_a_changed_solution_is_compiled_again(cache, tmp_path, monkeypatch, backend):
    workdir = Workdir(tmp_path)
    compiles = Compiles(workdir, monkeypatch)
    reference(workdir, backend)
    solution = KATA.solution_path(cache)
    solution.write_text(solution.read_text() + "\n# edited\n")
    reference(workdir, backend)
    assert compiles.count == 2


@pytest.mark.parametrize(
    "change",
    ["xtc-tools version", "CPU", "ISA", "harness source"],
)
def test_another_xtc_cpu_isa_or_harness_misses(cache, tmp_path, monkeypatch, change):
    from xtc_katas.measure.backends import KataBackend

    backend = KataBackend("mlir")
    workdir = Workdir(tmp_path)
    compiles = Compiles(workdir, monkeypatch)
    reference(workdir, backend)
    if change == "xtc-tools version":
        monkeypatch.setattr(module_cache, "versions", lambda: {"xtc-tools": "0.3.3"})
        module_cache._platform.cache_clear()
    elif change == "CPU":
        monkeypatch.setattr(module_cache, "cpu", lambda: "model name: another CPU")
        module_cache._platform.cache_clear()
    elif change == "ISA":
        monkeypatch.setattr(machine, "emulated_isa", lambda: "avx2")
    else:
        path = cache / "xtc_katas" / "checks" / "kinds.py"
        path.write_text(path.read_text() + "\n# edited\n")
    try:
        reference(workdir, backend)
    finally:
        module_cache._platform.cache_clear()
        backends.emulating.cache_clear()  # an emulated Backend class must not outlive it
    assert compiles.count == 2


def test_a_damaged_entry_is_compiled_again(cache, tmp_path, monkeypatch):
    from xtc_katas.measure.backends import KataBackend

    backend = KataBackend("mlir")
    workdir = Workdir(tmp_path)
    compiles = Compiles(workdir, monkeypatch)
    reference(workdir, backend)
    (entry,) = Path(module_cache.cache_root()).glob("*/*/module.json")
    entry.write_text("{not json")
    module = reference(workdir, backend)
    assert compiles.count == 2
    numerics.assert_computes(module, TUTORIAL, "mlir", ("random",))


def test_the_cache_can_be_turned_off(cache, tmp_path, monkeypatch):
    from xtc_katas.measure.backends import KataBackend

    monkeypatch.setenv(module_cache.ENABLED_ENV, "0")
    workdir = Workdir(tmp_path)
    compiles = Compiles(workdir, monkeypatch)
    for _ in range(2):
        reference(workdir, KataBackend("mlir"))
    assert compiles.count == 2
    assert not Path(module_cache.cache_root()).exists()


def test_a_second_store_of_one_key_leaves_the_first(cache, tmp_path):
    from xtc_katas.measure.backends import KataBackend

    workdir = Workdir(tmp_path)
    module = reference(workdir, KataBackend("mlir"))
    (entry,) = Path(module_cache.cache_root()).glob("*/*")
    before = (entry / "module.so").read_bytes()
    module_cache.store(entry, module)  # as a second pytest-xdist worker would
    assert (entry / "module.so").read_bytes() == before
    assert [p.name for p in entry.parent.iterdir()] == [entry.name]  # no scratch left


HOST_RUNTIME = """
import sys
from xtc.runtimes.host import runtime
if sys.argv[1] == "hit":  # a second process must not build it again
    def refuse(*args):
        raise AssertionError("XTC's host runtime was compiled again")
    runtime._compile_runtime = refuse
from xtc_katas.measure import module_cache
module_cache.host_runtime()
entries = runtime.resolve_runtime(runtime.RuntimeType.HOST)
assert "evaluate_perf" in entries, sorted(entries)
print("host runtime", sorted(module_cache.cache_root().glob("host-runtime/*.so")))
"""


def test_xtcs_host_runtime_is_compiled_once_per_machine(tmp_path):
    import subprocess
    import sys

    from xtc_katas.grade.repo_copy import learner_env

    env = learner_env(XTC_KATAS_CACHE_DIR=str(tmp_path / "cache"))
    for run in ("miss", "hit"):
        done = subprocess.run(
            [sys.executable, "-c", HOST_RUNTIME, run],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        assert "host-runtime" in done.stdout and ".so" in done.stdout, done.stdout


def test_a_trusted_entry_is_loaded_only_with_its_recorded_sha256_and_compiles_stay_own(
    cache, tmp_path, monkeypatch
):
    """A graded run (grade/grading_job.py): the node's cache, made by the trusted step and
    indexed by the grader, is read, never written; an entry changed after its sha256 was
    recorded (a poisoned library) is a miss, compiled again into the run's own cache."""
    import json

    from xtc_katas.measure.backends import KataBackend

    backend = KataBackend("mlir")
    workdir = Workdir(tmp_path)
    compiles = Compiles(workdir, monkeypatch)
    trusted, own = tmp_path / "trusted", tmp_path / "own"
    monkeypatch.setenv(module_cache.DIR_ENV, str(trusted / "modules"))
    reference(workdir, backend)  # the trusted step
    recorded = module_cache.index(trusted)
    Path(f"{trusted}{module_cache.TRUSTED_INDEX}").write_text(json.dumps({"files": recorded}))
    monkeypatch.setenv(module_cache.DIR_ENV, str(own / "modules"))
    monkeypatch.setenv(module_cache.TRUSTED_ENV, str(trusted))
    module = reference(workdir, backend)
    assert compiles.count == 1 and not own.exists()  # read from the trusted cache
    numerics.assert_computes(module, TUTORIAL, "mlir", ("random",))
    (library,) = trusted.glob("modules/*/*/module.so")
    library.write_bytes(library.read_bytes() + b"poison")
    module = reference(workdir, backend)
    assert compiles.count == 2  # not loaded: compiled again
    assert len(list(own.glob("modules/*/*/module.so"))) == 1  # into its own cache
    assert set(module_cache.index(trusted)) == set(recorded)  # nothing written there
    numerics.assert_computes(module, TUTORIAL, "mlir", ("random",))
