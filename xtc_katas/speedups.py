"""Performance floors: the learner's schedule against the naive one and the reference.

A floor is a speedup over the naive schedule, measured side by side in one run (see
timing.py), so the machine's weather cancels out. The reference solution runs in the same
interleaved rounds: its figures tell the learner how far there is to go, and they are
what the floors were calibrated on (the manifest gives the measured ranges).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from xtc_katas import loader
from xtc_katas.backends import KataBackend
from xtc_katas.compiling import Workdir
from xtc_katas.failures import KataFailure
from xtc_katas.learner_schedules import fresh_scheduler
from xtc_katas.manifest import Kata
from xtc_katas.problems import Matmul
from xtc_katas.timing import percent_of_peak, time_side_by_side


@dataclass(frozen=True)
class Speedups:
    """Side-by-side figures of one run: speedups over naive, and % of the cores' peak."""

    learner: float
    reference: float
    learner_percent: float
    reference_percent: float

    def summary(self) -> str:
        return (
            f"yours {self.learner:.1f}x naive ({self.learner_percent:.1f}% of peak); the "
            f"reference solution, same run: {self.reference:.1f}x "
            f"({self.reference_percent:.1f}% of peak)"
        )


def measure(
    modules: dict[str, Any],
    problem: Matmul,
    peak_fmas_per_s: float,
    cores: int = 1,
    rounds: int = 5,
) -> Speedups:
    """Time naive, learner and reference interleaved; each one's best of every round.

    `modules` must hold "naive", "learner" and "reference". `cores` is how many cores the
    schedules may use (the % of peak is of that many cores).
    """
    timings = time_side_by_side(modules, problem, rounds=rounds)

    def percent(name: str) -> float:
        return percent_of_peak(problem.fmas, timings.best[name], peak_fmas_per_s, cores)

    return Speedups(
        learner=timings.speedup("learner", "naive"),
        reference=timings.speedup("reference", "naive"),
        learner_percent=percent("learner"),
        reference_percent=percent("reference"),
    )


#: A floor is at most this fraction of the reference's slowest speedup (calibration.py):
#: the slowest run of a correct solution clears its floor by 1/0.7 = 1.43x, more than the
#: 1.3x that flakecheck.py requires, with room for noise the calibration did not see.
HEADROOM = 0.7


def floor_now(floor: float, figures: Speedups) -> float:
    """The floor, lowered when the reference itself could not reach floor / HEADROOM now.

    Short timing samples (timing.py) keep the reference's speedups close to a quiet
    machine's even with a core taken by another program, so this rarely applies. When
    it does, every figure of the run has dropped together, and the learner is held to
    HEADROOM of what the reference reached in the same rounds: still a side-by-side
    ratio, never a free pass.
    """
    return min(floor, HEADROOM * figures.reference)


def assert_floor(
    figures: Speedups, floor: float, where: str, backend: str, problem: Matmul, advice: str
) -> None:
    """Fail with the learner's figures, the reference's, and what to try next."""
    applied = floor_now(floor, figures)
    if figures.learner >= applied:
        return
    busy = (
        f" (the machine is busy: the reference reached only {figures.reference:.1f}x, so "
        f"the floor is {HEADROOM:g} of that instead of {floor:g}x)"
        if applied < floor
        else ""
    )
    raise KataFailure(
        f"{where}: {figures.learner:.1f}x faster than the naive schedule on {backend} "
        f"({problem.label}), below this task's floor of {applied:.3g}x{busy}.\n"
        f"  {figures.summary()}\n  next: {advice}"
    )


def cores() -> int:
    """The cores a parallel schedule may use: what the runtimes were told (backends.py)."""
    return int(os.environ.get("OMP_NUM_THREADS") or os.cpu_count() or 1)


@dataclass
class FloorCheck:
    """Judge one task's speed: compile naive, learner and reference; time; compare.

    `build(module)` turns the learner's or the reference's module into (impl, scheduler);
    the reference is the same task's solution in solutions/, loaded by path.
    """

    kata: Kata
    backend: KataBackend
    workdir: Workdir
    peak: Callable[[], float]
    record_perf: Callable[..., None]

    def __call__(
        self,
        function: str,
        problem: Matmul,
        build: Callable[[ModuleType], tuple[Any, Any]],
        learner: ModuleType,
        cores: int = 1,
    ) -> Speedups:
        def compiled(module: ModuleType, stem: str) -> Any:
            impl, scheduler = build(module)
            return self.workdir.compile(impl, scheduler.schedule(), stem=stem)

        learner_module = compiled(learner, "learner")
        impl, scheduler = fresh_scheduler(self.backend, problem)
        modules = {
            "naive": self.workdir.compile(impl, scheduler.schedule(), stem="naive"),
            "learner": learner_module,
            "reference": compiled(loader.load(self.kata, solution=True), "reference"),
        }
        figures = measure(modules, problem, self.peak(), cores)
        floor = self.kata.floor(function, self.backend.name)
        self.record_perf(
            speedup=figures.learner,
            percent_of_peak=figures.learner_percent,
            reference_speedup=figures.reference,
            floor=floor,
            floor_applied=floor_now(floor, figures),
        )
        task = self.kata.task(function)
        advice = task.hints[-1] if task and task.hints else "see the lesson"
        assert_floor(
            figures,
            floor,
            f"{self.kata.id} › {function}()",
            self.backend.name,
            problem,
            f"{advice} (all hints: xtc-katas hint {self.kata.number})",
        )
        return figures
