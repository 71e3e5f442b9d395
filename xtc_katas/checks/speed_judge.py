"""The `speed_judge` fixture: race the learner's kernel, judge its speed.

One race (timing.py), in one child process: the naive schedule, the learner's kernel, the
task's reference solution and, when the manifest names one, the previous technique's
reference, interleaved. The judgement is speed_rule.py's, the same for every kata.
"""

from __future__ import annotations

import functools
import itertools
import os
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from xtc_katas.checks.learner_schedules import apply_task, fresh_scheduler, kind_source
from xtc_katas.checks.speed_rule import Bar, Speedups, bar, judge, step_pays
from xtc_katas.kata import loader
from xtc_katas.kata.manifest import Kata
from xtc_katas.kata.problems import PROBLEMS, Problem
from xtc_katas.measure import machine
from xtc_katas.measure.backends import KataBackend
from xtc_katas.measure.timing import (
    Bounded,
    Timings,
    format_percent,
    percent_of_peak,
    time_side_by_side,
)
from xtc_katas.measure.workdir import Workdir


def cores() -> int:
    """The cores a parallel schedule may use: what the runtimes were told (backends.py)."""
    return int(os.environ.get("OMP_NUM_THREADS") or os.cpu_count() or 1)


def compile_solution(
    workdir: Workdir,
    kata: Kata,
    name: str,
    backend: KataBackend,
    problem: Problem,
    unfused: bool = False,
) -> Any:
    """Compile a manifest reference ("function" or "NN_kata.function") from solutions/;
    `unfused`: without its fusion."""
    owner, function = kata.solution_of(name)
    solution = loader.load(owner, solution=True)
    impl, scheduler = apply_task(owner, solution, function, backend, problem, unfused)
    stem = f"{owner.number:02d}_{function}{'_unfused' if unfused else ''}"
    key = {
        "kernel": "solution",
        "kata": owner.id,
        "function": function,
        "unfused": unfused,
        "kind_source": kind_source(owner.task(function)),
    }
    return workdir.compile(impl, scheduler.schedule(), stem, cache_key={**key, **_of(problem)})


def compile_naive(workdir: Workdir, backend: KataBackend, problem: Problem) -> Any:
    """The untransformed schedule of `problem`: every race's baseline."""
    impl, scheduler = fresh_scheduler(backend, problem)
    key = {"kernel": "naive", **_of(problem)}
    return workdir.compile(impl, scheduler.schedule(), "naive", cache_key=key)


def _of(problem: Problem) -> dict[str, str]:
    """The problem in a cache key: its class and every field (frozen dataclasses)."""
    return {"problem": repr(problem)}


#: What each baseline's speedups are over, in a failure message.
BASELINES = {
    "naive": "the speed of the naive schedule",  # 0.5x reads right too
    "unfused": "the speed of the same schedule unfused",
}


def race_task(
    workdir: Workdir,
    kata: Kata,
    function: str,
    backend: KataBackend,
    problem: Problem,
    learner: Any,
    learner_unfused: Any = None,
) -> tuple[Speedups, Timings]:
    """Naive, `learner` (a compiled module), the reference and the previous task's
    reference of `kata.function`, timed side by side; speedups over naive.

    A task whose manifest baseline is "unfused" races instead the learner's kernel and
    `learner_unfused` (the same schedule without its fusion), and the reference with and
    without its fusion: each side's speedup over its own unfused self.
    """
    modules, speedups = race_kernels(
        workdir, kata, function, backend, problem, learner, learner_unfused
    )
    timings = time_side_by_side(modules, problem)
    return speedups(timings), timings


def race_kernels(
    workdir: Workdir,
    kata: Kata,
    function: str,
    backend: KataBackend,
    problem: Problem,
    learner: Any,
    learner_unfused: Any = None,
) -> tuple[dict[str, Any], Callable[[Timings], Speedups]]:
    """The compiled kernels of `race_task` and how to read their Speedups from their
    timings: compiled once, they can be timed again (SpeedJudge re-races a near miss)."""
    task = kata.task(function)
    if task is None:
        raise LookupError(f"{kata.id} has no task {function}")
    if PROBLEMS.get(task.problem) != problem:
        raise LookupError(
            f"{kata.id}.{function} races {problem.label}, the manifest says {task.problem!r}"
        )
    reference = task.reference or function
    if task.baseline == "unfused":
        if learner_unfused is None:
            raise LookupError(f"{kata.id}.{function} races against itself unfused: pass it")
        modules = {
            "learner_unfused": learner_unfused,
            "learner": learner,
            "reference_unfused": compile_solution(
                workdir, kata, reference, backend, problem, unfused=True
            ),
            "reference": compile_solution(workdir, kata, reference, backend, problem),
        }
        return modules, read_over_unfused
    modules = {
        "naive": compile_naive(workdir, backend, problem),
        "learner": learner,
        "reference": compile_solution(workdir, kata, reference, backend, problem),
    }
    if task.previous:
        modules["previous"] = compile_solution(workdir, kata, task.previous, backend, problem)
    return modules, functools.partial(read_over_naive, previous=bool(task.previous))


def read_over_unfused(timings: Timings | Bounded) -> Speedups:
    """The speedups of a race against unfused twins (kata 09): each side's over its own
    schedule without its fusion."""
    return Speedups(
        learner=timings.speedup("learner", "learner_unfused"),
        reference=timings.speedup("reference", "reference_unfused"),
    )


def read_over_naive(timings: Timings | Bounded, previous: bool = False) -> Speedups:
    """The speedups over naive of a race: the reference's and the previous step's, each
    the median of its round-by-round ratios to naive; the learner's, the reference's
    times the learner's own round-by-round ratio to the reference.

    Pairing the learner with the reference, round by round, is what holds under a CPU
    hog: two compiles of kata 10's TVM parallel reference, 14 races each under
    `flakecheck --hog`'s busy loop (Intel Xeon family 6 model 207), read 0.66-1.32x of
    each other as two medians of ratios to naive, 0.91-1.03x as one median of their
    ratios to each other (timing.py's docstring has the rest).
    """
    reference = timings.speedup("reference", "naive")
    return Speedups(
        learner=reference * timings.speedup("learner", "reference"),
        reference=reference,
        previous=timings.speedup("previous", "naive") if previous else None,
    )


#: A correct kernel that misses the bar in one race is raced again, up to RACES races in
#: all, as long as it reached NEAR_MISS of the bar: on a busy 2-vCPU machine, two compiles
#: of one schedule read 1.6-1.7x apart in one race (kata 04's TVM parallel reference, 48x
#: and 81x; kata 10's MLIR blocking, 1.77x and 2.92x, AMD EPYC family 25 under a CPU hog).
#: A kernel below NEAR_MISS of the bar fails at once, and the bar itself never moves.
RACES = 3
NEAR_MISS = 0.5
#: Set (to anything), every race runs all its rounds: flakecheck measures margins so.
FULL_RACES_ENV = "XTC_KATAS_FULL_RACES"


def settled(
    speedups: Callable[[Timings], Speedups], cap: float | None
) -> Callable[[Timings], bool]:
    """A running race's test: True once no further round can change what SpeedJudge
    does with it (pass; miss narrowly, and race again; miss widely) nor whether the step
    pays (its note).

    Each speedup a race reads lies in its range (Timings.speedup_range), and the two
    outcomes are monotone in each speedup, so over the box of those ranges they take
    their extremes at its corners. A race reads each speedup with a different kernel on
    the fast side, so the corners are the subsets of kernels read at the low end of
    their range (Bounded): where every corner gives the same outcomes, so does every
    value the remaining rounds could bring."""

    def standing(figures: Speedups) -> int:
        value = bar(figures, cap).value
        return 2 if figures.learner >= value else 1 if figures.learner >= NEAR_MISS * value else 0

    def decided(timings: Timings) -> bool:
        names = list(timings.rounds)
        outcomes = set()
        for size in range(len(names) + 1):
            for low in itertools.combinations(names, size):
                figures = speedups(Bounded(timings, frozenset(low)))  # type: ignore[arg-type]
                outcomes.add((standing(figures), step_pays(figures)))
                if len(outcomes) > 1:
                    return False
        return True

    return decided


@dataclass
class SpeedJudge:
    """Judge one task's speed on this machine, against figures from the same run."""

    kata: Kata
    backend: KataBackend
    workdir: Workdir
    peak: Callable[[], float]
    record_perf: Callable[..., None]
    #: Probe the peak again when a kernel ran faster than it; True if it rose
    #: (machine_peak.reprobe). The default never does.
    reprobe: Callable[[], bool] = lambda: False

    def __call__(
        self,
        function: str,
        problem: Problem,
        learner: Any,
        advice: str = "",
        learner_unfused: Any = None,
        **recorded: Any,
    ) -> Bar:
        """Race `learner` (a compiled module of `function`) and assert the bar.

        `advice` is the failure's "next:" line (default: the task's last hint);
        `recorded` adds figures to the summary (e.g. the search's best candidate). The %
        of peak is of every core for a task the manifest marks `parallel`. A task raced
        against itself unfused (kata 09) passes `learner_unfused` too.
        """
        modules, speedups = race_kernels(
            self.workdir, self.kata, function, self.backend, problem, learner, learner_unfused
        )
        cap = self.kata.cap(function, self.backend.name)
        task = self.kata.task(function)
        threads = cores() if task and task.parallel else 1
        why = task.no_gain_reason(self.backend.name) if task else ""
        readings: list[float] = []
        done = None if os.environ.get(FULL_RACES_ENV) else settled(speedups, cap)
        for _ in range(RACES):
            timings = time_side_by_side(modules, problem, settled=done)
            result = speedups(timings)
            applied = bar(result, cap, why)
            readings.append(result.learner)
            if result.learner >= applied.value or result.learner < NEAR_MISS * applied.value:
                break

        fastest = min(timings.typical("learner"), timings.typical("reference"))
        peak = self.peak()
        while percent_of_peak(problem.fmas, fastest, peak, threads) > 100 and self.reprobe():
            peak = self.peak()

        def percent(name: str) -> float:
            # the median round, as the speedups: the two figures of a message agree
            return percent_of_peak(problem.fmas, timings.typical(name), peak, threads)

        if applied.step_note:
            warnings.warn(
                StepDoesNotPay(
                    f"{self.kata.id} › {function}() on {self.backend}, "
                    f"{machine.describe()}: {applied.step_note}"
                ),
                stacklevel=2,
            )
        self.record_perf(
            speedup=result.learner,
            **({"races": len(readings)} if len(readings) > 1 else {}),
            percent_of_peak=percent("learner"),
            reference_speedup=result.reference,
            **({"previous_speedup": result.previous} if result.previous else {}),
            cap=cap,
            bar=applied.value,
            **({"step": applied.step_note} if applied.step_note else {}),
            **recorded,
        )
        hint = task.speed_hint(self.backend.name) if task else "see the lesson"
        return judge(
            result,
            cap,
            f"{self.kata.id} › {function}()",
            f"{BASELINES[task.baseline if task else 'naive']} on {self.backend} ({problem.label})",
            advice or f"{hint} (more hints: xtc-katas hint {self.kata.number} {function})",
            f"% of peak: yours {format_percent(percent('learner'))}, the reference "
            f"{format_percent(percent('reference'))} ({threads} core{'s' if threads > 1 else ''})"
            + (
                f"; yours in {len(readings)} races: {', '.join(f'{r:.3g}x' for r in readings)}"
                if len(readings) > 1
                else ""
            ),
            why,
        )


class StepDoesNotPay(UserWarning):
    """This run's reference of a step was not faster than the previous step's reference:
    shown in pytest's warnings summary, so a passing test does not claim a gain."""
