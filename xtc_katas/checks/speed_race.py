"""The `speed_check` fixture: time the learner's kernel in a race, judge it.

One race (timing.py), in one child process: the naive schedule, the learner's kernel, the
task's reference solution and, when the manifest names one, the previous technique's
reference, interleaved. The judgement is speed_rule.py's, the same for every kata.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from xtc_katas.checks.learner_schedules import apply_task, fresh_scheduler
from xtc_katas.kata import loader
from xtc_katas.kata.manifest import Kata
from xtc_katas.kata.problems import PROBLEMS, Problem
from xtc_katas.measure import machine
from xtc_katas.measure.backends import KataBackend
from xtc_katas.measure.speed_rule import Bar, Race, bar, judge
from xtc_katas.measure.timing import (
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
    return workdir.compile(impl, scheduler.schedule(), stem=stem)


#: What each baseline's speedups are over, in a failure message.
BASELINES = {
    "naive": "faster than the naive schedule",
    "unfused": "the speed of the same schedule unfused",
}


def race(
    workdir: Workdir,
    kata: Kata,
    function: str,
    backend: KataBackend,
    problem: Problem,
    learner: Any,
    learner_unfused: Any = None,
) -> tuple[Race, Timings]:
    """Naive, `learner` (a compiled module), the reference and the previous task's
    reference of `kata.function`, timed side by side; speedups over naive.

    A task whose manifest baseline is "unfused" races instead the learner's kernel and
    `learner_unfused` (the same schedule without its fusion), and the reference with and
    without its fusion: each side's speedup over its own unfused self.
    """
    task = kata.task(function)
    if task is None:
        raise LookupError(f"{kata.id} has no task {function}")
    if PROBLEMS.get(task.problem) != problem:
        raise LookupError(
            f"{kata.id}.{function} races {problem.label}, the manifest says {task.problem!r}"
        )
    if task.baseline == "unfused":
        if learner_unfused is None:
            raise LookupError(f"{kata.id}.{function} races against itself unfused: pass it")
        reference = task.reference or function
        timings = time_side_by_side(
            {
                "learner_unfused": learner_unfused,
                "learner": learner,
                "reference_unfused": compile_solution(
                    workdir, kata, reference, backend, problem, unfused=True
                ),
                "reference": compile_solution(workdir, kata, reference, backend, problem),
            },
            problem,
        )
        return (
            Race(
                learner=timings.speedup("learner", "learner_unfused"),
                reference=timings.speedup("reference", "reference_unfused"),
            ),
            timings,
        )
    impl, scheduler = fresh_scheduler(backend, problem)
    modules = {
        "naive": workdir.compile(impl, scheduler.schedule(), stem="naive"),
        "learner": learner,
        "reference": compile_solution(workdir, kata, task.reference or function, backend, problem),
    }
    if task.previous:
        modules["previous"] = compile_solution(workdir, kata, task.previous, backend, problem)
    timings = time_side_by_side(modules, problem)
    return (
        Race(
            learner=timings.speedup("learner", "naive"),
            reference=timings.speedup("reference", "naive"),
            previous=timings.speedup("previous", "naive") if task.previous else None,
        ),
        timings,
    )


@dataclass
class SpeedCheck:
    """Judge one task's speed on this machine, against figures from the same run."""

    kata: Kata
    backend: KataBackend
    workdir: Workdir
    peak: Callable[[], float]
    record_perf: Callable[..., None]

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
        result, timings = race(
            self.workdir, self.kata, function, self.backend, problem, learner, learner_unfused
        )
        cap = self.kata.cap(function, self.backend.name)
        task = self.kata.task(function)
        threads = cores() if task and task.parallel else 1

        def percent(name: str) -> float:
            return percent_of_peak(problem.fmas, timings.best[name], self.peak(), threads)

        why = task.no_gain_reason(self.backend.name) if task else ""
        applied = bar(result, cap, why)
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
            percent_of_peak=percent("learner"),
            reference_speedup=result.reference,
            **({"previous_speedup": result.previous} if result.previous else {}),
            cap=cap,
            bar=applied.value,
            **({"step": applied.step_note} if applied.step_note else {}),
            **recorded,
        )
        hint = task.hints[-1] if task and task.hints else "see the lesson"
        return judge(
            result,
            cap,
            f"{self.kata.id} › {function}()",
            f"{BASELINES[task.baseline if task else 'naive']} on {self.backend} ({problem.label})",
            advice or f"{hint} (more hints: xtc-katas hint {self.kata.number} {function})",
            f"% of peak: yours {format_percent(percent('learner'))}, the reference "
            f"{format_percent(percent('reference'))} ({threads} core{'s' if threads > 1 else ''})",
            why,
        )


class StepDoesNotPay(UserWarning):
    """This run's reference of a step was not faster than the previous step's reference:
    shown in pytest's warnings summary, so a passing test does not claim a gain."""
