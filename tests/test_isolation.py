"""Kernels run in a child process: a crash or a hang fails one test, never the session."""

import ctypes
import os
import re
import time

import numpy as np
import pytest

from tools.copy_runs import edit_stub, run_pytest
from xtc_katas.checks.schedule import fresh_scheduler
from xtc_katas.grade.repo_copy import copy_repository
from xtc_katas.kata import loader, progress
from xtc_katas.kata.manifest import find
from xtc_katas.kata.problems import LARGE, TUTORIAL, Matmul
from xtc_katas.measure import isolation, numerics
from xtc_katas.measure.backends import KataBackend


class CrashingModule:
    """A compiled module whose kernel does what a broken schedule's kernel can do."""

    def __init__(self, how):
        self.how = how

    def get_evaluator(self, **kwargs):
        return self

    def evaluate(self):
        if self.how == "segfault":
            ctypes.string_at(0)  # reads address 0: SIGSEGV
        if self.how == "abort":
            os.abort()
        if self.how == "hang":
            time.sleep(60)
        return [1e-3], 0, ""


@pytest.mark.parametrize("how, signal_name", [("segfault", "SIGSEGV"), ("abort", "SIGABRT")])
def test_a_crashing_kernel_fails_with_the_signal_and_the_process_lives(how, signal_name):
    inputs = TUTORIAL.inputs()
    with pytest.raises(isolation.KernelCrashed, match=rf"crashed \({signal_name}\)"):
        numerics.run(CrashingModule(how), TUTORIAL, inputs)
    # the parent's arrays are as they were
    assert all(np.array_equal(x, y) for x, y in zip(inputs, TUTORIAL.inputs(), strict=True))


def _evaluate_on_one_element_arrays(module):
    one = [np.ones((1, 1), np.float32), np.ones((1, 1), np.float32)]
    out = [np.zeros((1, 1), np.float32)]
    return module.get_evaluator(
        parameters=(one, out), repeat=1, number=1, min_repeat_ms=0, validate=False
    ).evaluate()


def test_a_real_compiled_kernel_that_writes_out_of_bounds_crashes_only_its_child(workdir):
    # XTC checks no array (field notes): a 2048x2048 matmul given 1x1 arrays writes 16 MB
    # past its output. MLIR's kernel: TVM's, given the same arrays, returned without a crash.
    impl, scheduler = fresh_scheduler(KataBackend("mlir"), Matmul(2048, 2048, 8))
    module = workdir.compile(impl, scheduler.schedule(), stem="out_of_bounds")
    with pytest.raises(isolation.KernelCrashed, match=r"crashed \(SIG(SEGV|BUS|ABRT)\)"):
        isolation.run_isolated(_evaluate_on_one_element_arrays, module, time_limit_s=60)


def test_a_hanging_kernel_is_stopped_with_the_likely_cause():
    start = time.perf_counter()
    with pytest.raises(isolation.KernelTimedOut, match="huge unroll"):
        isolation.run_isolated(CrashingModule("hang").evaluate, time_limit_s=1)
    assert time.perf_counter() - start < 10


def test_an_exception_in_the_child_comes_back_with_its_traceback():
    def fails():
        raise ValueError("from the child")

    with pytest.raises(ValueError, match="from the child") as info:
        isolation.run_isolated(fails)
    assert any("Traceback" in note for note in info.value.__notes__)


def test_the_fork_costs_milliseconds():
    start = time.perf_counter()
    for _ in range(5):
        isolation.run_isolated(int, "1")
    per_call = (time.perf_counter() - start) / 5
    assert per_call < 0.5, f"a fork round trip took {per_call:.3f} s"


def test_a_kernels_child_is_forked_only_once_the_background_imports_are_done(monkeypatch):
    # The harness imports its backends in a thread while the learner's worker starts
    # (plugin/options.py); a fork copies only the forking thread, so a child
    # forked mid-import would wait forever on the import lock the thread held.
    import threading

    from xtc_katas.measure import backends

    imported = threading.Event()

    def slow_import(self):
        time.sleep(0.5)
        imported.set()

    monkeypatch.setattr(backends.KataBackend, "Backend", property(slow_import))
    isolation.in_background(backends.import_backends, ["mlir"])
    assert not imported.is_set()
    assert isolation.run_isolated(imported.is_set), "forked before the import was done"


def test_a_full_collection_after_the_backends_imports_costs_milliseconds():
    # One took 0.32-0.34 s with MLIR's imported, and pytest 9 makes two as a run ends
    # (2-vCPU AMD EPYC family 25 model 1, at a load of 8); after gc.freeze, 3 us.
    import gc

    from xtc_katas.measure import backends

    backends.import_backends(["mlir"])
    start = time.perf_counter()
    gc.collect()
    took = time.perf_counter() - start
    assert took < 0.1, f"a full collection took {took:.2f} s"


@pytest.mark.slow
def test_a_crash_in_a_kata_test_fails_that_test_and_the_session_goes_on(tmp_path):
    repo = copy_repository(tmp_path)
    kata = find(3)
    # The learner's own code crashes: the modules of kata 03 are the harness's, whatever
    # compile_baseline returns (checks/compiles.py), so the crash is percent_of_peak_of's.
    edit_stub(
        repo,
        3,
        '    """Evaluate `module`',
        "    import ctypes\n    ctypes.string_at(0)  # reads address 0\n",
    )
    _, out = run_pytest(
        repo,
        "katas/03_compile",
        "--backend",
        "mlir",
        "-k",
        "uses_the_fastest_call or raises_when_evaluation_fails or rejects_an_unknown",
    )
    assert "03_compile: percent_of_peak_of() crashed (SIGSEGV)" in out, out
    assert re.search(r"\b3 failed\b", out), "the tests after the crash still ran"
    assert "03_compile › generated_code() is not implemented yet" in out, "the next test ran"
    assert "Fatal Python error" not in out, "one readable line, not a stack dump"
    recorded = progress.kata_results(kata, progress.read(repo), repo)
    assert recorded, "the progress record survives the crash"


@pytest.mark.slow
def test_a_hanging_test_times_out_with_the_likely_cause_and_the_run_goes_on(tmp_path):
    """The limit covers the learner's worker start (a forkserver child importing the
    stub) as well as the call: at 2 s, a loaded machine stopped the start and the message
    could not name the function (split branch, load 5-7). 15 s leaves the start room
    under load; the hang is stopped once, the second test fails at once."""
    repo = copy_repository(tmp_path)
    edit_stub(
        repo,
        1,
        '    """Number of fused multiply-adds',
        "    import time\n    time.sleep(600)  # a compile that never ends\n",
    )
    _, out = run_pytest(
        repo,
        "katas/01_peak",
        "--timeout=15",
        "-k",
        "tutorial_problem or percent_of_peak_of_a_known_case",
    )
    assert "01_peak › matmul_fmas(): this test timed out" in out, out
    assert "huge unroll" in out
    assert re.search(r"\b2 failed\b", out), "the next test still ran"


def _items_then(how):
    yield 1
    yield 2
    if how == "segfault":
        ctypes.string_at(0)
    if how == "raise":
        raise ValueError("candidate 3 is broken")
    yield 3


def _items(how):
    """`_items_then(how)`'s items as a worker streams them (`xtc-katas explore`'s search)."""
    with isolation.Worker(int) as worker:
        yield from worker.iterate(_items_then, how)


def test_a_search_streams_its_items_from_the_child():
    assert list(_items("finish")) == [1, 2, 3]


@pytest.mark.parametrize(
    "how, error", [("segfault", isolation.KernelCrashed), ("raise", ValueError)]
)
def test_a_search_that_dies_gives_its_items_then_the_error(how, error):
    seen = []
    with pytest.raises(error):
        for item in _items(how):
            seen.append(item)
    assert seen == [1, 2], "the items measured before the crash reach the progress bar"


def _threads_used(module, threads, backend_name):
    """Run a parallel kernel once after limit_threads(threads); its runtime's thread count."""
    from threadpoolctl import threadpool_info

    from xtc_katas.measure.timing import limit_threads

    limit_threads(threads)
    a, b = LARGE.inputs()
    out = np.empty(LARGE.output_shape, np.float32)
    module.get_evaluator(
        parameters=([a, b], [out]), repeat=1, number=1, min_repeat_ms=0, validate=False
    ).evaluate()
    if backend_name == "mlir":
        return {i["num_threads"] for i in threadpool_info() if i["user_api"] == "openmp"}
    import tvm_ffi

    return tvm_ffi.get_global_func("runtime.NumThreads")()


@pytest.mark.parametrize("backend_name", ["mlir", "tvm"])
@pytest.mark.parametrize("threads", [1, 2])
def test_kernels_raced_with_numpy_run_on_exactly_the_threads_asked(workdir, backend_name, threads):
    # Kata 08 races XTC and numpy on the same threads: the child that runs a kernel must
    # give TVM's pool (started there) and OpenMP (MLIR) exactly that many.
    from xtc_katas.checks.task_under_test import TaskUnderTest

    kata = find(4)
    solution = loader.load(kata, solution=True)
    backend = KataBackend(backend_name)
    impl, scheduler = TaskUnderTest.of_module(
        kata, "schedule_parallel", solution, backend, problem=LARGE
    ).scheduled()
    module = workdir.compile(impl, scheduler.schedule(), stem="parallel")
    used = isolation.run_isolated(_threads_used, module, threads, backend_name)
    expected = {threads} if backend_name == "mlir" else threads
    assert used == expected, f"{backend_name}'s runtime runs {used} threads, asked {threads}"
