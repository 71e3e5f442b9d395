"""Side-by-side timing: the only kind of performance figure a speed judgement may rest on.

A race times every kernel in each of up to ROUNDS rounds, in a new order each round, and
keeps each kernel's best time in each round; a speedup is the median over the rounds of
that round's ratio (Timings.speedup). Two kernels timed in the same rounds see the same
moments of a shared machine, where an absolute time does not hold from one moment to the
next.

In a round, each kernel takes up to SAMPLES samples of about SAMPLE_S each (as many calls
as fit, at least one), through XTC's own evaluator. How each kernel is sampled follows
from one estimate of its call (plan_samples): kernels within TWINS of each other share one
plan and alternate their samples (A B A B), each from two placements of its library
(second_placements), every library held open for the race (held_libraries). A kernel
whose call lasts SLOW_CALL_S or more takes one call per sample without XTC's warm-up call
and, without a twin, is timed only every SLOW_EVERY rounds. Slow twins on OpenMP have its
workers sleep after each call (openmp_workers_sleep_at_once); parallel TVM twins of
SLEEPING_TVM_WORKERS_CALL_S or more run again in a child whose TVM workers sleep
(tvm_workers_should_sleep). A race stops after MIN_ROUNDS rounds or more once no further
round could change its verdict (`settled`, Timings.speedup_range).

Why each piece is there, with the measurements: docs/timing.md.
"""

from __future__ import annotations

import _ctypes
import contextlib
import ctypes
import math
import os
import random
import statistics
import time
from collections.abc import Callable, Collection, Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from xtc_katas.kata.failures import KataFailure
from xtc_katas.kata.problems import Problem
from xtc_katas.measure import module_cache
from xtc_katas.measure.isolation import run_isolated

#: Rounds a race runs at most, and samples of a kernel in a round at most
#: (docs/timing.md#interleaved-rounds).
ROUNDS = 20
SAMPLES = 10
#: A sample's length: short enough to fit between two preemptions by another process
#: (calibrated on an AMD EPYC Zen 4 class, docs/timing.md#short-samples).
SAMPLE_S = 2e-4
ROUND_S = 0.025  # the time a kernel's samples may fill in a round (a slow one: SLOW_EVERY's)
SLOW_CALL_S = 0.01  # from this long a call on, one call per sample and no warm-up
#: A slow kernel without a twin is timed in one round of this many (its samples then
#: fill their time): docs/timing.md#slow-kernels-sampled-sparsely.
SLOW_EVERY = 4
#: Slow twins up to this long a call take a sample from each of their two placements in
#: every round (second_placements); longer ones take them by turns, round to round.
BOTH_PLACEMENTS_S = 0.05
#: Kernels whose one-call estimates are within this factor of each other share one plan.
TWINS = 3.0
#: A race whose verdict is settled may stop after this many of its rounds (of ROUNDS):
#: before more than half of them are done, a median's range is never settled.
MIN_ROUNDS = ROUNDS // 2 + 1
#: For callers that time a few long rounds and read each kernel's best (a search's
#: ranking, a tuning): samples and round time as the races had before they were split.
FEW_LONG_ROUNDS = {"samples": 40, "round_s": 0.1}


@dataclass
class Timings:
    """Each kernel's best time (seconds per call) and every round's best, for reports."""

    best: dict[str, float] = field(default_factory=dict)
    rounds: dict[str, list[float]] = field(default_factory=dict)
    #: The rounds the race was to run: more than len(rounds[...]) while it runs, or when
    #: it stopped early.
    planned: int = 0

    def typical(self, name: str) -> float:
        """The kernel's median over the rounds of its best time in a round: the time the
        speedups (medians over rounds) stand for, so a % of peak agrees with them."""
        return statistics.median(self.rounds[name])

    def speedup(self, fast: str, slow: str) -> float:
        """How many times faster `fast` ran than `slow`: the median, over the rounds, of
        the ratio of their minima in that round.

        A round times every kernel back to back, so its ratio compares them in the same
        conditions; the median then ignores a round in which one kernel alone found the
        machine idle, which the ratio of overall minima does not
        (docs/timing.md#the-median-of-per-round-ratios).
        """
        return statistics.median(self._ratios(fast, slow))

    def speedup_range(self, fast: str, slow: str) -> tuple[float, float]:
        """The lowest and highest value `speedup` can take once the planned rounds are
        all run, whatever the missing rounds bring: the median is monotone in each
        round's ratio, so the missing ratios at 0, then at infinity, give the bounds."""
        ratios = self._ratios(fast, slow)
        missing = max(0, self.planned - len(ratios))
        return (
            statistics.median(ratios + [0.0] * missing),
            statistics.median(ratios + [math.inf] * missing),
        )

    def _ratios(self, fast: str, slow: str) -> list[float]:
        return round_ratios(self.rounds[slow], self.rounds[fast])


def round_ratios(slow: list[float], fast: list[float]) -> list[float]:
    """Round by round, the slow side's time over the fast side's: how many times faster."""
    return [slow_s / fast_s for slow_s, fast_s in zip(slow, fast, strict=True)]


@dataclass(frozen=True)
class Bounded:
    """A view of a running race's Timings whose `speedup` is one end of its range: the
    low end for the kernels in `low`, the high end for the others. Feeding it to the
    code that reads Speedups from Timings gives the race's worst or best case."""

    timings: Timings
    low: frozenset[str]

    def speedup(self, fast: str, slow: str) -> float:
        low, high = self.timings.speedup_range(fast, slow)
        return low if fast in self.low else high


#: pytest-xdist names each of its workers in their environment, and a process a worker
#: starts (a harness test's repository copy) inherits the name.
XDIST_WORKER = "PYTEST_XDIST_WORKER"


class CoresShared(KataFailure):
    """Kernels were to be timed while pytest-xdist runs other tests on the same cores."""


def require_own_cores(what: str) -> None:
    """Refuse to time `what` under pytest-xdist: the figures would measure the neighbour.

    The plugin leaves the kata's perf tests out under `pytest -n`; this catches the rest,
    e.g. a test of the harness's own suite that runs a kata's speed races in a repository
    copy from an xdist worker without being marked perf (tox runs those serially).
    """
    worker = os.environ.get(XDIST_WORKER)
    if worker:
        raise CoresShared(
            f"{what} would be timed while pytest-xdist runs other tests beside it (worker "
            f"{worker}, or a process it started): the figures would measure the neighbour. "
            "Run it without -n (pytest -m perf); a harness test that starts it in a "
            "repository copy must be marked @pytest.mark.perf"
        )


def time_side_by_side(
    modules: dict[str, Any],
    problem: Problem,
    rounds: int = ROUNDS,
    samples: int = SAMPLES,
    sample_s: float = SAMPLE_S,
    threads: int | None = None,
    settled: Callable[[Timings], bool] | None = None,
    round_s: float = ROUND_S,
    baselines: Collection[str] = ("naive",),
) -> Timings:
    """Time every module on the same inputs, interleaved, `rounds` times; keep the minima.

    The kernels run in one child process (isolation.py): a crash fails the test only.
    With `threads`, on exactly that many threads (limit_threads); without, on what the
    runtimes were told (backends.set_thread_defaults). Never under pytest-xdist
    (require_own_cores). With `settled`, the race stops after MIN_ROUNDS or more rounds
    as soon as `settled(timings)` says no further round could change its verdict.
    """
    require_own_cores(f"{', '.join(modules)} on {problem.label}")
    inputs = problem.inputs("random", seed=0)
    race = (
        modules,
        problem,
        inputs,
        rounds,
        samples,
        sample_s,
        threads,
        settled,
        round_s,
        baselines,
    )
    timings = run_isolated(_time_interleaved, *race, what="a kernel timed side by side")
    if isinstance(timings, TvmWorkersSpun):  # again, in a child whose TVM workers sleep
        timings = run_isolated(
            _time_interleaved, *race, timings.estimates, what="a kernel timed side by side"
        )
    assert isinstance(timings, Timings), "a child with TVM's workers asleep asked again"
    return timings


def shared_buffers(inputs: list[np.ndarray], out: np.ndarray) -> tuple[list[Any], list[Any]]:
    """XTC's own arrays, made once and handed to every kernel of a race.

    Given numpy arrays, XTC's evaluator copies them into fresh buffers at every
    `evaluate()` (`ensure_ndarray_parameters`, `xtc/utils/evaluation.py`); given its own
    NDArrays, it uses them as they are. Shared buffers take one difference out of a race:
    every kernel reads and writes the same memory (docs/timing.md#shared-buffers).
    """
    from xtc.runtimes.types.ndarray import NDArray

    return [NDArray(x) for x in inputs], [NDArray(out)]


def _evaluate(evaluator: Any, name: str) -> list[float]:
    times, code, message = evaluator.evaluate()
    if code != 0 or not times:
        raise RuntimeError(f"timing {name} failed with code {code}: {message}")
    return times


def fastest_call(module: Any, name: str, **options: Any) -> float:
    """Seconds of the fastest call of XTC's evaluator made with `options`, as a learner's
    code calls it (the hints' way): the like-for-like reading a learner's figure is
    compared with when it reads lower than the harness's short samples
    (docs/timing.md#searches-the-learners-own-times)."""
    return min(_evaluate(module.get_evaluator(**options), name))


@dataclass(frozen=True)
class Plan:
    """How a race times one kernel: `number` calls per sample (0: one call without XTC's
    warm-up call) and `repeat` samples, every `every` rounds (between them its last
    reading stands), its samples alternating with those of its `twins` (the kernels of
    its group, itself included). A kernel alone in its group is one XTC evaluator of that
    `number` and `repeat`; twins are one evaluate() per sample (twin_evaluation)."""

    number: int
    repeat: int
    every: int = 1
    twins: tuple[str, ...] = field(default=(), compare=False)

    @property
    def alternates(self) -> bool:
        """Whether this kernel's samples alternate with a twin's (one evaluate() each)."""
        return len(self.twins) > 1


def plan_samples(
    estimates: dict[str, float],
    samples: int = SAMPLES,
    sample_s: float = SAMPLE_S,
    round_s: float = ROUND_S,
    baselines: Collection[str] = ("naive",),
) -> dict[str, Plan]:
    """Each kernel's Plan, from `estimates` (seconds of one call, read once at the start).

    Kernels whose estimates lie within TWINS of each other (baselines aside) are timed
    with one plan, the fastest one's: two kernels a verdict compares (the learner's and
    the reference's) get the same number of samples of the same length in every round,
    whatever noise their estimates read (docs/timing.md#sample-plans-and-twins).
    Baselines are planned alone.

    A kernel whose calls last SLOW_CALL_S or more is timed one call per sample, without
    XTC's warm-up call, and only every SLOW_EVERY rounds (with that many rounds' samples)
    when it is a baseline or alone in its group: the baseline divides every other
    kernel's time in a round, so its sparser readings move every speedup together; a
    kernel alone is at least TWINS times slower or faster than every other, far from any
    bar a race judges (docs/timing.md#slow-kernels-sampled-sparsely). Slow twins are timed
    in every round.
    """
    plans: dict[str, Plan] = {}

    def sparse(seconds: float) -> Plan:
        fit = int(SLOW_EVERY * round_s / seconds)
        return Plan(0, max(1, min(samples, fit)), SLOW_EVERY)

    def plan(group: list[str]) -> None:
        fastest = estimates[group[0]]
        if fastest < SLOW_CALL_S:
            number = max(1, round(sample_s / fastest))
            repeat = max(3, min(samples, int(round_s / (number * fastest))))
            chosen = Plan(number, repeat)
        elif len(group) == 1:
            chosen = sparse(fastest)
        else:  # one sample from each of its two placements at least, if calls are short
            least = 2 if fastest < BOTH_PLACEMENTS_S else 1
            chosen = Plan(0, max(least, min(samples, int(round_s / fastest))))
        plans.update(dict.fromkeys(group, replace(chosen, twins=tuple(group))))

    group: list[str] = []
    for name in sorted(estimates, key=estimates.__getitem__):
        if name in baselines:
            plan([name])
            continue
        if group and estimates[name] > TWINS * estimates[group[0]]:
            plan(group)
            group = []
        group.append(name)
    if group:
        plan(group)
    return plans


def library_of(module: Any) -> str | None:
    """The shared library a compiled module runs from; None for anything else (a test's
    fake kernel has no file)."""
    file_name = getattr(module, "file_name", None)
    return file_name if file_name and getattr(module, "file_type", "shlib") == "shlib" else None


@contextlib.contextmanager
def held_libraries(modules: Iterable[Any]) -> Iterator[list[ctypes.CDLL]]:
    """Each compiled module's shared library, opened once more while the race runs.

    XTC's evaluator opens the module's library at every evaluate() and closes it after
    (xtc/targets/host/HostEvaluator.py): the last close unloads it, and the next
    evaluate() maps it again, so its first call pays page faults and symbol binding.
    Alternating samples are one evaluate() each: held open (the same path, so the same
    handle: dlopen counts references), a library stays mapped and a sample times the
    kernel, not its loading. Closed after the race, so that a later compile to the same
    path in this process is loaded afresh (the field notes' dump_file trap).
    """
    libraries = [library_of(module) for module in modules]
    held = [ctypes.CDLL(str(Path(library).absolute())) for library in libraries if library]
    try:
        yield held
    finally:
        for library in held:
            _ctypes.dlclose(library._handle)


def twin_evaluation(plan: Plan) -> tuple[int, int]:
    """XTC's evaluator (number, repeat) for ONE sample of a twin: number 1 becomes 0, one
    call without XTC's warm-up call (with it, each sample would cost two calls); from 2
    calls a sample on, each evaluate() makes its own warm-up call (at most 1.5x the calls
    a round budgets, at number 2, and a sample then follows a warm call, as in blocks)."""
    return (plan.number if plan.number > 1 else 0), 1


def _time_interleaved(
    modules: dict[str, Any],
    problem: Problem,
    inputs: list[np.ndarray],
    rounds: int,
    samples: int,
    sample_s: float,
    threads: int | None,
    settled: Callable[[Timings], bool] | None = None,
    round_s: float = ROUND_S,
    baselines: Collection[str] = ("naive",),
    known: dict[str, float] | None = None,
) -> Timings | TvmWorkersSpun:
    """The race, in its child. `known`: the estimates of a first child whose TVM workers
    spun (TvmWorkersSpun); this one has them sleep, before any kernel runs."""
    if known is not None:
        os.environ.setdefault(TVM_SPIN_ENV, "0")
    if threads is not None:
        limit_threads(threads)
    parameters = shared_buffers(inputs, np.zeros(problem.output_shape, dtype=problem.dtype))

    def evaluator(module: Any, number: int, repeat: int) -> Any:
        return module.get_evaluator(
            parameters=parameters, number=number, repeat=repeat, min_repeat_ms=0, validate=False
        )

    threads_before = threads_running()
    estimates = dict(known or {})
    for name, module in modules.items():
        if name in estimates:
            continue
        one_call = min(_evaluate(evaluator(module, 1, 1), name))  # after a warm-up call
        if one_call < SLOW_CALL_S:  # a short call: its time is the best of 5
            one_call = max(min(_evaluate(evaluator(module, 1, 5), name)), 1e-9)
        estimates[name] = one_call
    plans = plan_samples(estimates, samples, sample_s, round_s, baselines)
    if tvm_workers_should_sleep(estimates, plans, threads_before):
        return TvmWorkersSpun(estimates)
    # A kernel alone in its group: its samples in one evaluate(), from its one placement.
    # Twins: one sample per evaluate(), in alternation, from two placements by turns.
    placements = second_placements(modules, plans)
    evaluators = {
        name: [
            evaluator(module, *twin_evaluation(plans[name]))
            if plans[name].alternates
            else evaluator(module, plans[name].number, plans[name].repeat)
            for module in placements[name]
        ]
        for name in modules
    }
    if any(plan.alternates and plan.number == 0 for plan in plans.values()):
        openmp_workers_sleep_at_once()
    with held_libraries(module for placed in placements.values() for module in placed):
        return _rounds(evaluators, plans, rounds, settled)


def second_placements(modules: dict[str, Any], plans: dict[str, Plan]) -> dict[str, list[Any]]:
    """Each kernel's placements: itself, and for twins a copy of its library too, which
    this process maps at another address; a twin's samples take the two by turns.

    The same kernel can run slower at one address than at another, in every race of a
    process (race children fork from one parent, so a module lands at the same address
    in each): docs/timing.md#second-placements. With two placements each, a round's best
    of a twin comes from the faster. A module without a library file (a test's fake) is
    its own second placement.
    """
    placements = {}
    for name, module in modules.items():
        placements[name] = [module]
        if plans[name].alternates:
            library = library_of(module)
            placements[name].append(
                module_cache.copied(module, f"{library}.at2") if library else module
            )
    return placements


#: LLVM's OpenMP runtime, which XTC's MLIR kernels link (XTC 0.3.2: libomp.so.5).
LIBOMP = "libomp.so.5"


def openmp_workers_sleep_at_once() -> bool:
    """Tell LLVM's OpenMP runtime, if a kernel of this process loaded it, to put its
    workers to sleep as soon as a parallel region ends (kmp_set_blocktime(0)).

    By default an OpenMP worker spins for 200 ms (KMP_BLOCKTIME) after each parallel
    region, waiting for the next. When another process keeps the worker's core busy, the
    spinning worker and that process share the core by turns, and a slow parallel call
    starts in whichever turn it finds. A sleeping worker is woken by the next region, and
    the scheduler gives a thread that slept its core back at once. Only for slow twins:
    each wake-up costs a fast kernel more than its turns do
    (docs/timing.md#sleeping-openmp-workers). Returns whether the runtime was there to
    tell.
    """
    libomp = loaded_openmp()
    if libomp is None:  # no kernel of this race uses OpenMP
        return False
    libomp.kmp_set_blocktime(0)
    return True


def loaded_openmp() -> ctypes.CDLL | None:
    """LLVM's OpenMP runtime if a kernel of this process loaded it (never loads it)."""
    try:
        return ctypes.CDLL(LIBOMP, mode=os.RTLD_NOLOAD)
    except OSError:
        return None


#: TVM's workers spin this many times for the next task before they sleep (default 300000
#: in apache-tvm 0.26, XTC 0.3.2's). TVM reads it once per process, when its first worker
#: starts (a function-static in ThreadPool::RunWorker).
TVM_SPIN_ENV = "TVM_THREAD_POOL_SPIN_COUNT"
#: Parallel TVM twins whose call lasts this long or more are raced with TVM's workers
#: asleep between tasks: their wake-up is then a small share of a call.
SLEEPING_TVM_WORKERS_CALL_S = 1e-3


@dataclass(frozen=True)
class TvmWorkersSpun:
    """A race child's answer when its TVM workers should have slept: the race runs again
    in a new child, with these estimates, whose TVM workers sleep (TVM_SPIN_ENV)."""

    estimates: dict[str, float]


def threads_running() -> int:
    """The threads of this process, native ones included (a runtime's workers)."""
    return len(os.listdir("/proc/self/task"))


def tvm_workers_should_sleep(
    estimates: dict[str, float], plans: dict[str, Plan], threads_before: int
) -> bool:
    """Whether this child's TVM workers should have slept: twins of
    SLEEPING_TVM_WORKERS_CALL_S or more a call, and threads started since the process had
    `threads_before` (its estimates ran a parallel kernel), none of them OpenMP's.

    TVM's workers spin between tasks, as OpenMP's do (openmp_workers_sleep_at_once), and
    under a CPU hog a spinning worker shares its core with the hog by turns; a fast
    kernel loses more to the wake-up than to the turns
    (docs/timing.md#sleeping-tvm-workers-and-the-restart). TVM's runtime does not use
    OpenMP, so threads started by the estimates without libomp loaded are TVM's workers
    (a race is of one backend: libomp, once loaded, stays). A user's own
    TVM_THREAD_POOL_SPIN_COUNT is left as it is.
    """
    if TVM_SPIN_ENV in os.environ:
        return False
    slow_twins = any(
        plan.alternates and estimates[name] >= SLEEPING_TVM_WORKERS_CALL_S
        for name, plan in plans.items()
    )
    started = threads_running() > threads_before
    return slow_twins and started and loaded_openmp() is None  # no OpenMP: TVM's threads


def _rounds(
    evaluators: dict[str, list[Any]],
    plans: dict[str, Plan],
    rounds: int,
    settled: Callable[[Timings], bool] | None,
) -> Timings:
    timings = Timings(rounds={name: [] for name in evaluators}, planned=rounds)
    order = random.Random(0)  # the same orders in every race: reproducible
    for done in range(1, rounds + 1):
        names = list(evaluators)
        order.shuffle(names)
        for name in names:
            if len(timings.rounds[name]) == done:
                continue  # timed beside a twin earlier in this round
            plan = plans[name]
            twins = [twin for twin in names if twin in plan.twins] if plan.alternates else [name]
            if (done - 1) % plan.every:
                for twin in twins:
                    timings.rounds[twin].append(timings.rounds[twin][-1])
                continue
            best = dict.fromkeys(twins, math.inf)
            for sample in range(plan.repeat if plan.alternates else 1):
                for twin in twins:
                    placed = evaluators[twin]
                    at = placed[(done + sample) % len(placed)]  # by turns, round to round
                    best[twin] = min(best[twin], *_evaluate(at, twin))
            for twin in twins:
                timings.rounds[twin].append(best[twin])
        if settled and MIN_ROUNDS <= done < rounds and settled(timings):
            break
    timings.best = {name: min(values) for name, values in timings.rounds.items()}
    return timings


def percent_of_peak(fmas: int, seconds: float, peak_fmas_per_s: float, cores: int = 1) -> float:
    """Achieved FMA/s as a percentage of the cores' peak: information, never a bar."""
    return 100.0 * fmas / seconds / (peak_fmas_per_s * cores)


#: Why a kernel can read above 100%: said wherever such a figure is shown.
ABOVE_PEAK = (
    "above the probe's peak: a turbo clock the probe did not see, or a noisy probe; "
    "the ratio to the reference is what counts"
)


def format_percent(value: float, digits: int = 1, why: str = ABOVE_PEAK) -> str:
    """`value` as "87.3%"; above 100%, followed by `why` in parentheses.

    A % of peak above 100 is not a kernel beating its machine: left unexplained, it
    teaches that the metric means nothing. Every place that prints one goes through here.
    """
    text = f"{value:.{digits}f}%"
    return f"{text} ({why})" if value > 100 else text


#: OpenBLAS's and TVM's workers busy-wait for a while after a call: numpy's samples pause
#: this long before and after, so that neither side's workers take the other's cores.
PAUSE_S = 0.2


def limit_threads(threads: int) -> None:
    """Run XTC's kernels in this process on exactly `threads` threads, on both backends.

    TVM reads TVM_NUM_THREADS when its thread pool starts, at the first parallel kernel
    of a process: the harness starts kernels only in fresh children (isolation.py), so
    setting it in the child is in time. MLIR's kernels use the OpenMP runtime, limited
    through threadpoolctl (omp_set_num_threads), which works after it started too.
    """
    os.environ["TVM_NUM_THREADS"] = os.environ["OMP_NUM_THREADS"] = str(threads)
    threadpool_limits(limits=threads, user_api="openmp")
    threadpool_limits(limits=threads, user_api="blas")


@dataclass(frozen=True)
class NumpyKernel:
    """numpy's own computation of `problem`, as a race times an XTC module: the yardstick
    of a race against numpy (kata 08). Its evaluator runs `problem.numpy_call` on the
    race's buffers, in the race's child, on the threads the race limits (limit_threads:
    BLAS included), pausing PAUSE_S around each sample."""

    problem: Problem

    def get_evaluator(self, parameters: Any, number: int, repeat: int, **_: Any) -> Any:
        inputs, (out,) = ([x.numpy() for x in side] for side in parameters)
        call = self.problem.numpy_call

        class Evaluator:
            def evaluate(self) -> tuple[list[float], int, str]:
                time.sleep(PAUSE_S)
                call(inputs, out)  # a warm-up call: BLAS starts its threads untimed
                times = []
                for _ in range(repeat):
                    start = time.perf_counter()
                    for _ in range(max(1, number)):
                        call(inputs, out)
                    times.append((time.perf_counter() - start) / max(1, number))
                time.sleep(PAUSE_S)
                return times, 0, ""

        return Evaluator()
