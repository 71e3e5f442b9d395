"""One race, one judge: every verdict of a kernel's speed (kata 12's optimizer, judged on a
cost model, has its own: optimizer_race.py).

A race (timing.time_side_by_side, in one child process) times side by side the kernels a
task built (TaskUnderTest.race_kernels: its baseline, the learner's, the reference and the
previous step's reference); the verdict is speed_rule.py's, the same for every kata.
"""

from __future__ import annotations

import dataclasses
import enum
import itertools
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from xtc_katas.checks.speed_rule import Bar, Speedups, bar, judge, step_note, step_pays, tier
from xtc_katas.measure.timing import (
    Bounded,
    Timings,
    format_percent,
    percent_of_peak,
    time_side_by_side,
)

if TYPE_CHECKING:
    from xtc_katas.checks.task_under_test import TaskUnderTest
    from xtc_katas.kata.problems import Problem

#: A correct kernel that misses the bar in one race is raced again, up to RACES races in
#: all, as long as it reached NEAR_MISS of the bar. A kernel below NEAR_MISS of the bar
#: fails at once. Each race sets its bar from its own reference figure; the last race's
#: verdict stands (docs/timing.md#re-races-of-near-misses).
RACES = 3
NEAR_MISS = 0.5
#: A race within this fraction of its bar, either side, is one whose verdict a re-run may
#: flip: the judge says so, pass or fail.
CLOSE = 0.10
CLOSE_NOTE = (
    f"close to the bar (within {CLOSE:.0%}): a re-run may read the other side of it; "
    "docs/judging.md says how a race is read"
)
Settled = Callable[[Timings], bool]
#: Set (to anything), every race runs all its rounds: flakecheck measures margins so.
FULL_RACES_ENV = "XTC_KATAS_FULL_RACES"


def speedups(timings: Timings | Bounded) -> Speedups:
    """A race's speedups over its baseline: the reference's and the previous step's, each
    the median of its round-by-round ratios to the baseline; the learner's, the
    reference's times the learner's own round-by-round ratio to the reference, so the two
    compare in the same moments (docs/timing.md#reading-the-learner-against-the-reference).
    Kata 09: each side's over its own unfused self."""
    rounds = timings.timings.rounds if isinstance(timings, Bounded) else timings.rounds
    if "learner_unfused" in rounds:
        return Speedups(
            learner=timings.speedup("learner", "learner_unfused"),
            reference=timings.speedup("reference", "reference_unfused"),
        )
    baseline = "numpy" if "numpy" in rounds else "naive"
    reference = timings.speedup("reference", baseline)
    return Speedups(
        learner=reference * timings.speedup("learner", "reference"),
        reference=reference,
        previous=timings.speedup("previous", baseline) if "previous" in rounds else None,
    )


def race(
    found: dict[str, Any], problem: Problem, threads: int | None, until: Settled | None = None
) -> tuple[Speedups, Timings]:
    """One race of the kernels `found` (by role: TaskUnderTest.race_kernels) on `threads`:
    their speedups and timings; `until` may stop it early (time_side_by_side's `settled`)."""
    timings = time_side_by_side(found, problem, threads=threads, baselines=BASELINES, settled=until)
    return speedups(timings), timings


class Standing(enum.Enum):
    """What judge_speed does with a race."""

    PASSES = "passes"
    NEAR_MISS = "races again"  # below the bar, but at NEAR_MISS of it or more
    FAILS = "fails"


def standing(figures: Speedups, cap: float | None) -> Standing:
    """Where a race's learner stands against its bar."""
    value = bar(figures, cap).value
    if figures.learner >= value:
        return Standing.PASSES
    return Standing.NEAR_MISS if figures.learner >= NEAR_MISS * value else Standing.FAILS


def settled(cap: float | None) -> Settled:
    """A running race's test: True once no further round can change what judge_speed
    does with it (pass; miss narrowly, and race again; miss widely) nor whether the step
    pays (its note).

    Each speedup a race reads lies in its range (Timings.speedup_range), and the two
    outcomes are monotone in each speedup, so over the box of those ranges they take
    their extremes at its corners: the subsets of kernels read at the low end of their
    range (Bounded). Where every corner gives the same outcomes, so does every value the
    remaining rounds could bring."""

    def decided(timings: Timings) -> bool:
        names = list(timings.rounds)
        outcomes = set()
        for size in range(len(names) + 1):
            for low in itertools.combinations(names, size):
                figures = speedups(Bounded(timings, frozenset(low)))
                outcomes.add((standing(figures, cap), step_pays(figures)))
                if len(outcomes) > 1:
                    return False
        return True

    return decided


def judge_speed(
    task: TaskUnderTest, found: dict[str, Any], advice: str, brief: bool = False, **recorded: Any
) -> Bar:
    """Race the task's kernels `found` (a near miss up to RACES times), record its
    figures, assert the bar; `advice` is a failure's "next:" line. `brief`: another test
    of the task (its shape test) tells the cause, so a failure gives this run's figures
    and `advice` alone, not the bar rule's notes. Nothing here builds a kernel: the task
    gives its fields, its peak and its record."""
    cap = task.kata.cap(task.function, task.backend.name)
    why = task.task.no_gain_reason(task.backend.name)
    done = None if os.environ.get(FULL_RACES_ENV) else settled(cap)
    readings: list[Speedups] = []
    for _ in range(RACES):
        result, timings = race(found, task.problem, task.threads, until=done)
        readings.append(result)
        if standing(result, cap) is not Standing.NEAR_MISS:
            break
    # "did not pay on this machine" only where several races agree; else "in this run"
    agreed = len(readings) > 1 and not any(step_pays(r) for r in readings)
    scope = f"on this machine ({len(readings)} races agreed)" if agreed else "in this run"
    applied = bar(result, cap, why, scope)
    close = abs(result.learner / applied.value - 1) < CLOSE

    cores = task.cores

    def percent(name: str) -> float:
        # the median round, as the speedups: the two figures of a message agree
        return percent_of_peak(task.problem.fmas, timings.typical(name), task.peak(), cores)

    while max(percent("learner"), percent("reference")) > 100 and task.reprobe():
        continue  # a kernel faster than the peak: the peak was probed again

    over_numpy = "numpy" in timings.rounds
    figures = {
        "speedup": result.learner,
        "races": len(readings) if len(readings) > 1 else None,
        "percent_of_peak": percent("learner"),
        "reference_speedup": result.reference,
        "previous_speedup": result.previous,
        "cap": cap,
        "bar": applied.value,
        "step": applied.step_note,
        "close": CLOSE_NOTE if close else None,
        "noisy": noise_note(timings),
    }
    if over_numpy:
        figures |= {"over": "numpy", "tier": tier(result.learner), "openblas": openblas()}
    elif task.task.baseline == "unfused":  # naive goes unsaid
        figures["over"] = "your schedule unfused"
    task.record(**{name: v for name, v in figures.items() if v is not None and v != ""}, **recorded)
    measured = {
        "naive": "the speed of the naive schedule",  # 0.5x reads right too
        "unfused": "the speed of the same schedule unfused",
    }.get(task.task.baseline, "")
    if over_numpy:
        measured = f"numpy's speed ({figures['openblas']})"
    on = f"{cores} core{'s' if cores > 1 else ''}"
    races = ", ".join(f"{r.learner:.3g}x" for r in readings)
    # A failure's note on a step that did not pay keeps to this run's figures: the
    # manifest's no_gain (read on other machines) goes to the recorded figures only.
    told = dataclasses.replace(applied, step_note="" if brief else step_note(result, "", scope))
    details = (
        f"% of peak: yours {format_percent(percent('learner'))}, the reference "
        f"{format_percent(percent('reference'))} ({on})"
        + (f"; your tier against numpy: {figures['tier']}" if over_numpy else "")
        + (f"; yours in {len(readings)} races: {races}" if len(readings) > 1 else "")
        + (f"\n  {CLOSE_NOTE}" if close else "")
    )
    noisy = f"\n  {figures['noisy']}" if figures["noisy"] else ""
    return judge(
        result,
        told,
        f"{task.kata.id} › {task.function}()",
        f"{measured} on {task.backend} ({task.problem.label}, {on})",
        advice,
        (noisy.lstrip() if brief else details + noisy),
    )


#: A figure whose round-by-round ratios span more than this factor moved with the
#: machine, not with the code: the learner is told so (issue 59: a parallel reference
#: read 21.8x against its previous step's 47.7x in one run, "the step did not pay").
NOISY = 2.0


def noise_note(timings: Timings) -> str | None:
    """A line where a figure the learner reads (yours, the reference's, the previous
    step's: each over its baseline) spanned more than NOISY over the race's rounds: its
    range and the machine's load; None when every figure held. It reads what the race
    measured, runs nothing, and changes no verdict."""
    rounds = timings.rounds
    if "learner_unfused" in rounds:
        pairs = [("yours", "learner", "learner_unfused")]
        pairs.append(("the reference", "reference", "reference_unfused"))
    else:
        base = "numpy" if "numpy" in rounds else "naive"
        pairs = [("yours", "learner", base), ("the reference", "reference", base)]
        pairs.append(("the previous step's reference", "previous", base))
    spans = []
    for label, kernel, baseline in pairs:
        times = list(zip(rounds.get(baseline, []), rounds.get(kernel, []), strict=False))
        ratios = [slow / fast for slow, fast in times if fast > 0 and slow > 0]
        if ratios and max(ratios) > NOISY * min(ratios):
            spans.append(f"{label} read {min(ratios):.3g}-{max(ratios):.3g}x")
    if not spans:
        return None
    load, count = os.getloadavg()[0], max(len(times) for times in rounds.values())
    return (
        f"this run was noisy: over its {count} rounds {', '.join(spans)} (load average "
        f"{load:.1f} on {os.cpu_count()} cores): the machine was busy, a re-run may read "
        "other figures"
    )


#: The kernels a race reads every other against (planned alone: timing.plan_samples).
BASELINES = ("naive", "numpy")


def openblas() -> str:
    """Which OpenBLAS kernel numpy runs, and the environment that can change it."""
    from threadpoolctl import threadpool_info

    blas = [i for i in threadpool_info() if i.get("user_api") == "blas"]
    shown = ", ".join(
        f"{i.get('internal_api')} {i.get('version')} kernel {i.get('architecture')}" for i in blas
    )
    names = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "OPENBLAS_NUM_THREADS")
    env = [f"{name}={os.environ[name]}" for name in names if name in os.environ]
    return shown + (f" ({', '.join(env)})" if env else "")
