"""A task raced against numpy (its kind's `numpy_race`: kata 08), as `task.assert_speed()`
runs it: the learner's kernel and the reference's, on exactly `threads` threads each,
interleaved with numpy's `matmul` on as many.

In each of NUMPY_ROUNDS rounds, XTC's best of CALLS calls for both kernels (in a child
process, timing.NumpyRace), then numpy's best of CALLS calls timed by pytest-benchmark,
which keeps the numpy side and the ratios (`extra_info`), so that `--benchmark-autosave`
and `--benchmark-compare` keep the learner's history. The reference's figure is the
median over rounds of numpy's time / its time; the learner's, the reference's times the
median over rounds of the reference's time / the learner's: read round by round against
each other, the two compare in the same moments (under a CPU hog, two medians of ratios
to numpy read 0.78 and 0.86 for two compiles of the same kernel; Intel Xeon, family 6
model 207, as AVX2). The bar is speed_rule.py's, as for every race; the tier (bronze,
silver, gold against numpy) is the headline.

The naive schedule is never run: at 1024^3 it takes ~6 s a call.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import os
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from threadpoolctl import threadpool_info, threadpool_limits

from xtc_katas.checks.speed_rule import Bar, Speedups, bar, judge
from xtc_katas.kata import loader
from xtc_katas.kata.failures import KataFailure
from xtc_katas.measure.timing import CALLS, NUMPY_ROUNDS, NumpyRace, percent_of_peak

if TYPE_CHECKING:
    from xtc_katas.checks.task_under_test import TaskUnderTest

TIERS = ((1.0, "gold: numpy's speed or better"), (0.75, "silver"), (0.5, "bronze"))
OPENBLAS_ENV = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "OPENBLAS_NUM_THREADS")


def tier(ratio: float) -> str:
    return next((name for bound, name in TIERS if ratio >= bound), "below bronze (0.5x)")


def openblas() -> str:
    """Which OpenBLAS kernel numpy runs, and the environment that can change it."""
    blas = [i for i in threadpool_info() if i.get("user_api") == "blas"]
    shown = ", ".join(
        f"{i.get('internal_api')} {i.get('version')} kernel {i.get('architecture')}" for i in blas
    )
    env = [f"{name}={os.environ[name]}" for name in OPENBLAS_ENV if name in os.environ]
    return shown + (f" ({', '.join(env)})" if env else "")


@contextlib.contextmanager
def uncaptured(fixture: Callable[[str], Any]) -> Iterator[None]:
    """A context in which stderr reaches the terminal: kata 08's reference chooses its
    kernel on its first run on a machine (~30 s) and says so, with a count, instead of a
    silent pause."""
    capture = fixture("pytestconfig").pluginmanager.getplugin("capturemanager")
    with capture.global_and_fixture_disabled() if capture else contextlib.nullcontext():
        yield


def reference_of(under_test: TaskUnderTest) -> TaskUnderTest:
    """The task's reference solution (the manifest's `reference`, default its own
    function), as a task under test: built and compiled as the learner's kernel is."""
    owner, function = under_test.kata.solution_of(under_test.task.reference or under_test.function)
    task = owner.task(function)
    if task is None:
        raise LookupError(f"{owner.id} has no task {function} (katas/manifest.toml)")
    solution = loader.load(owner, solution=True)
    return dataclasses.replace(under_test, kata=owner, task=task, module=solution)


def assert_keeps_up_with_numpy(under_test: TaskUnderTest, advice: str) -> Bar:
    """Race the task's kernel and its reference against numpy on `under_test.threads`
    threads; record the figures; assert this run's bar (speed_rule.py). `advice`: the
    failure's "next:" line (default: the task's last hint for this backend)."""
    kata, function, backend = under_test.kata, under_test.function, under_test.backend
    problem, threads, fixture = under_test.problem, under_test.threads, under_test.fixture
    hint = under_test.task.speed_hint(backend.name)
    advice = advice or f"{hint} (more hints: xtc-katas hint {kata.number} {function})"
    learner = under_test.compiled()
    benchmark = fixture("benchmark")
    if benchmark.disabled:
        raise KataFailure(
            f"{kata.id}: this test times numpy through pytest-benchmark, which is "
            "disabled (--benchmark-disable, or pytest -n): run it without those options"
        )
    with uncaptured(fixture):
        reference = reference_of(under_test).compiled()
    race = NumpyRace({"learner": learner, "reference": reference}, problem, threads)
    calls = itertools.count()

    def xtc_round() -> None:
        # pytest-benchmark's setup hook, untimed by it, before each numpy call: every
        # CALLS numpy calls, one round of both XTC kernels (in a child process).
        if next(calls) % CALLS == 0:
            race.xtc_round()

    with threadpool_limits(limits=threads, user_api="blas"):
        kernel = openblas()
        problem.numpy_call(race.inputs, race.out)  # OpenBLAS starts its threads, untimed
        benchmark.pedantic(
            problem.numpy_call,
            args=(race.inputs, race.out),
            setup=xtc_round,
            rounds=NUMPY_ROUNDS * CALLS,
        )
    calls_made = list(benchmark.stats.stats.data)
    race.numpy = [min(calls_made[n : n + CALLS]) for n in range(0, len(calls_made), CALLS)]
    reference_ratio = race.ratio("reference")
    result = Speedups(
        learner=reference_ratio * race.relative("learner", "reference"),
        reference=reference_ratio,
    )
    cap = kata.cap(function, backend.name)
    applied = bar(result, cap)
    speed = under_test.speed_judge
    fastest = min(race.best("learner"), race.best("reference"))
    peak = speed.peak()
    while percent_of_peak(problem.fmas, fastest, peak, threads) > 100 and speed.reprobe():
        peak = speed.peak()

    def percent(name: str) -> float:
        return round(percent_of_peak(problem.fmas, race.best(name), peak, threads), 1)

    figures = {
        "ratio_to_numpy": round(result.learner, 3),
        "reference_ratio_to_numpy": round(result.reference, 3),
        "xtc_ms": round(1e3 * race.best("learner"), 2),
        "reference_ms": round(1e3 * race.best("reference"), 2),
        "numpy_ms": round(1e3 * race.best("numpy"), 2),
        "percent_of_peak": percent("learner"),
        "numpy_percent_of_peak": percent("numpy"),
        "tier": tier(result.learner),
        "openblas": kernel,
    }
    benchmark.extra_info.update(backend=backend.name, threads=threads, **figures)
    under_test.speed_judge.record_perf(
        speedup_vs_numpy=result.learner,
        reference_vs_numpy=result.reference,
        cap=cap,
        bar=applied.value,
        tier=tier(result.learner),
        openblas=kernel,
    )
    print(f"\n{backend} {threads} thread(s): {figures}")
    return judge(
        result,
        cap,
        f"{kata.id} › {function}()",
        f"numpy's speed on {backend} with {threads} thread(s) (median of {NUMPY_ROUNDS} "
        "side-by-side rounds)",
        advice,
        f"XTC {figures['xtc_ms']} ms, the reference {figures['reference_ms']} ms, numpy "
        f"{figures['numpy_ms']} ms ({kernel}); your tier: {tier(result.learner)}",
    )
