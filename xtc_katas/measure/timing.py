"""Side-by-side timing: the only kind of performance figure a speed judgement may rest on.

Two kernels timed in the same rounds see the same moments of a shared machine, where an
absolute time does not hold from one moment to the next. So a race times every kernel in
each of up to ROUNDS rounds, in a new order each round, keeps each kernel's best in each
round, and reads a speedup as the median over the rounds of that round's ratio. How each
kernel is sampled, and why each piece is there with the measurements that decided it:
docs/timing.md.
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
from xtc_katas.measure import module_cache, wire
from xtc_katas.measure.isolation import run_isolated

#: Rounds a race runs at most, and samples of a kernel in a round at most.
ROUNDS = 20
SAMPLES = 10
#: A sample's length, as many calls as fit (at least one): short enough to fall between
#: two preemptions by another process.
SAMPLE_S = 2e-4
ROUND_S = 0.025  # the time a kernel's samples may fill in a round
SLOW_CALL_S = 0.01  # from this long a call on, one call per sample and no warm-up call
SLOW_EVERY = 4  # a slow kernel without a twin is timed in one round of this many
#: Slow twins up to this long a call sample both their placements in every round.
BOTH_PLACEMENTS_S = 0.05
#: Kernels whose one-call estimates are within this factor of each other share one plan.
TWINS = 3.0
#: A settled race may stop after this many rounds: before more than half of them are
#: done, a median's range is never settled.
MIN_ROUNDS = ROUNDS // 2 + 1
#: For callers that read each kernel's best over a few long rounds, not a verdict (a
#: search's ranking, a tuning).
FEW_LONG_ROUNDS = {"samples": 40, "round_s": 0.1}


@wire.record
@dataclass
class Timings:
    """Each kernel's best time (seconds per call), and its best in every round."""

    best: dict[str, float] = field(default_factory=dict)
    rounds: dict[str, list[float]] = field(default_factory=dict)
    planned: int = 0  # the rounds the race was to run: more than it ran, if it stopped early

    def typical(self, name: str) -> float:
        """The median of the kernel's round bests: the time its speedups stand for, so that
        a % of peak agrees with them."""
        return statistics.median(self.rounds[name])

    def speedup(self, fast: str, slow: str) -> float:
        """How many times faster `fast` ran than `slow`: the median over the rounds of the
        ratio of their bests in that round: unlike a ratio of overall minima, it ignores a
        round in which one kernel alone found the machine idle."""
        return statistics.median(self._ratios(fast, slow))

    def speedup_range(self, fast: str, slow: str) -> tuple[float, float]:
        """The lowest and highest value `speedup` can take once the planned rounds are all
        run: a median is monotone in each ratio, so the missing ones at 0, then at inf."""
        ratios = self._ratios(fast, slow)
        missing = max(0, self.planned - len(ratios))
        return (
            statistics.median(ratios + [0.0] * missing),
            statistics.median(ratios + [math.inf] * missing),
        )

    def _ratios(self, fast: str, slow: str) -> list[float]:
        pairs = zip(self.rounds[slow], self.rounds[fast], strict=True)
        return [slow_s / fast_s for slow_s, fast_s in pairs]


@dataclass(frozen=True)
class Bounded:
    """A running race's Timings whose `speedup` is one end of its range: the low end for
    the kernels in `low`, the high end for the others (a corner of the race's outcomes)."""

    timings: Timings
    low: frozenset[str]

    def speedup(self, fast: str, slow: str) -> float:
        low, high = self.timings.speedup_range(fast, slow)
        return low if fast in self.low else high


def require_own_cores(what: str) -> None:
    """Refuse to time `what` under pytest-xdist (a worker, or a process it started): the
    plugin leaves perf tests out under `pytest -n`, this catches the rest."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker:
        raise KataFailure(
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
    threads: int | None = None,
    settled: Callable[[Timings], bool] | None = None,
    round_s: float = ROUND_S,
    baselines: Collection[str] = ("naive",),
) -> Timings:
    """Time every module on the same inputs, in at most `rounds` interleaved rounds, in a
    child process; with `threads`, on exactly that many. With `settled`, the race stops
    after MIN_ROUNDS or more rounds once `settled(timings)` says no round could change it."""
    require_own_cores(f"{', '.join(modules)} on {problem.label}")
    inputs = problem.inputs("random", seed=0)
    race = (modules, problem, inputs, rounds, samples, threads, settled, round_s, baselines)
    what = "a kernel timed side by side"
    timings = run_isolated(_time_interleaved, *race, what=what)
    if isinstance(timings, TvmWorkersSpun):  # again, in a child whose TVM workers sleep
        timings = run_isolated(_time_interleaved, *race, timings.estimates, what=what)
    assert isinstance(timings, Timings), "a child with TVM's workers asleep asked again"
    return timings


def shared_buffers(inputs: list[np.ndarray], out: np.ndarray) -> tuple[list[Any], list[Any]]:
    """XTC's own arrays, made once for every kernel of a race: given numpy arrays, XTC's
    evaluator copies them into fresh buffers at every evaluate(); given its NDArrays, it
    uses them as they are, and every kernel reads and writes the same memory."""
    from xtc.runtimes.types.ndarray import NDArray

    return [NDArray(x) for x in inputs], [NDArray(out)]


def _evaluate(evaluator: Any, name: str) -> list[float]:
    times, code, message = evaluator.evaluate()
    if code != 0 or not times:
        raise RuntimeError(f"timing {name} failed with code {code}: {message}")
    return times


def fastest_call(module: Any, name: str, **options: Any) -> float:
    """Seconds of the fastest call of XTC's evaluator made with `options`, as a learner's
    code calls it: what a learner's figure that reads below the harness's is compared with."""
    return min(_evaluate(module.get_evaluator(**options), name))


@dataclass(frozen=True)
class Plan:
    """How a race times one kernel: `number` calls per sample (0: one call, no warm-up)
    and `repeat` samples, every `every` rounds (its last reading stands between), one
    evaluate() each by turns with its `twins` (its group); alone, all in one evaluate()."""

    number: int
    repeat: int
    every: int = 1
    twins: tuple[str, ...] = field(default=(), compare=False)

    @property
    def alternates(self) -> bool:
        return len(self.twins) > 1


def plan_samples(
    estimates: dict[str, float],
    samples: int = SAMPLES,
    round_s: float = ROUND_S,
    baselines: Collection[str] = ("naive",),
) -> dict[str, Plan]:
    """Each kernel's Plan, from `estimates` (seconds of one call, read once at the start).

    Kernels within TWINS of each other (baselines aside) share the fastest's plan: the
    two a verdict compares get the same samples in every round. A kernel of SLOW_CALL_S
    or more a call is timed one call per sample and, if it is a baseline or alone in its
    group (far from any bar), only every SLOW_EVERY rounds.
    """
    plans: dict[str, Plan] = {}

    def plan(group: list[str]) -> None:
        fastest = estimates[group[0]]
        if fastest < SLOW_CALL_S:
            number = max(1, round(SAMPLE_S / fastest))
            repeat = max(3, min(samples, int(round_s / (number * fastest))))
            chosen = Plan(number, repeat)
        elif len(group) == 1:  # its samples fill SLOW_EVERY rounds' time
            fit = int(SLOW_EVERY * round_s / fastest)
            chosen = Plan(0, max(1, min(samples, fit)), SLOW_EVERY)
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
    """The shared library a compiled module runs from; None for anything else (a fake)."""
    file_name = getattr(module, "file_name", None)
    return file_name if file_name and getattr(module, "file_type", "shlib") == "shlib" else None


@contextlib.contextmanager
def held_libraries(modules: Iterable[Any]) -> Iterator[list[ctypes.CDLL]]:
    """Each compiled module's shared library, held open while the race runs: XTC's
    evaluator loads and unloads it at every evaluate(), which a sample would time."""
    libraries = [library_of(module) for module in modules]
    held = [ctypes.CDLL(str(Path(library).absolute())) for library in libraries if library]
    try:
        yield held
    finally:
        for library in held:  # a later compile to the same path must load afresh
            _ctypes.dlclose(library._handle)


def evaluation(plan: Plan) -> tuple[int, int]:
    """XTC's evaluator (number, repeat) for one evaluate(): all of a kernel's samples when
    it is alone, ONE sample of a twin (a one-call sample without XTC's warm-up call, which
    would double its cost)."""
    if not plan.alternates:
        return plan.number, plan.repeat
    return (plan.number if plan.number > 1 else 0), 1


def _time_interleaved(
    modules: dict[str, Any],
    problem: Problem,
    inputs: list[np.ndarray],
    rounds: int,
    samples: int,
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
    plans = plan_samples(estimates, samples, round_s, baselines)
    if tvm_workers_should_sleep(estimates, plans, threads_before):
        return TvmWorkersSpun(estimates)
    placements = second_placements(modules, plans)
    evaluators = {
        name: [evaluator(module, *evaluation(plans[name])) for module in placements[name]]
        for name in modules
    }
    if any(plan.alternates and plan.number == 0 for plan in plans.values()):
        openmp_workers_sleep_at_once()
    with held_libraries(module for placed in placements.values() for module in placed):
        return _rounds(evaluators, plans, rounds, settled)


def second_placements(modules: dict[str, Any], plans: dict[str, Plan]) -> dict[str, list[Any]]:
    """Each kernel's placements: itself and, for a twin, a copy of its library mapped at
    another address (a fake is its own copy). A kernel can run slower at one address than
    at another: a twin's samples take the two by turns, and a round keeps the faster."""
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
    """Have LLVM's OpenMP runtime, if a kernel of this process loaded it, put its workers
    to sleep as soon as a parallel region ends (True if it was there to tell): a spinning
    worker takes turns on a core another process keeps busy (slow twins only)."""
    libomp = loaded_openmp()
    if libomp is None:
        return False
    libomp.kmp_set_blocktime(0)
    return True


def loaded_openmp() -> ctypes.CDLL | None:
    """LLVM's OpenMP runtime if a kernel of this process loaded it (never loads it)."""
    try:
        return ctypes.CDLL(LIBOMP, mode=os.RTLD_NOLOAD)
    except OSError:
        return None


#: TVM's workers spin this many times for the next task before they sleep. TVM reads it
#: once per process, when its first worker starts.
TVM_SPIN_ENV = "TVM_THREAD_POOL_SPIN_COUNT"
#: Parallel TVM twins of this long a call or more are raced with TVM's workers asleep
#: between tasks: a wake-up is then a small share of a call.
SLEEPING_TVM_WORKERS_CALL_S = 1e-3


@wire.record
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
    """Whether this child's TVM workers should have slept, as OpenMP's do: twins of
    SLEEPING_TVM_WORKERS_CALL_S or more a call, and threads started since `threads_before`
    without libomp loaded (so TVM's). A user's own spin count is left as it is."""
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
    """`value` as "87.3%"; above 100%, followed by `why`: unexplained, such a figure
    teaches that the metric means nothing."""
    text = f"{value:.{digits}f}%"
    return f"{text} ({why})" if value > 100 else text


#: OpenBLAS's and TVM's workers busy-wait for a while after a call: numpy's samples pause
#: this long before and after, so that neither side's workers take the other's cores.
PAUSE_S = 0.2


def limit_threads(threads: int) -> None:
    """Run XTC's kernels (and BLAS) in this process on exactly `threads` threads (TVM reads
    TVM_NUM_THREADS when its pool starts; OpenMP and BLAS through threadpoolctl)."""
    os.environ["TVM_NUM_THREADS"] = os.environ["OMP_NUM_THREADS"] = str(threads)
    threadpool_limits(limits=threads, user_api="openmp")
    threadpool_limits(limits=threads, user_api="blas")


@dataclass(frozen=True)
class NumpyKernel:
    """numpy's own computation of `problem`, timed as a race times an XTC module (kata 08's
    yardstick): on the race's buffers and threads, pausing PAUSE_S around each sample."""

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
