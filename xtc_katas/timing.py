"""Side-by-side timing: the only kind of performance figure a floor may rest on.

On a shared 2-core machine an absolute time or % of peak swings by ±30% or more from one
moment to the next, but two kernels timed in alternation see the same weather. So:
interleave (A B A B ...), take each kernel's minimum over every round, and compare
ratios. Each round is XTC's own evaluator with several short repeats; the minimum of
short repeats rejects the interrupted ones.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from xtc_katas.isolation import run_isolated
from xtc_katas.numerics import check_arrays
from xtc_katas.problems import Matmul

ROUNDS = 5
REPEAT = 10
MIN_REPEAT_MS = 10


@dataclass
class Timings:
    """Each kernel's best time (seconds per call) and every round's best, for reports."""

    best: dict[str, float] = field(default_factory=dict)
    rounds: dict[str, list[float]] = field(default_factory=dict)

    def speedup(self, fast: str, slow: str) -> float:
        return self.best[slow] / self.best[fast]


def time_side_by_side(
    modules: dict[str, Any],
    problem: Matmul,
    rounds: int = ROUNDS,
    repeat: int = REPEAT,
    min_repeat_ms: int = MIN_REPEAT_MS,
) -> Timings:
    """Time every module on the same inputs, interleaved, `rounds` times; keep the minima.

    The kernels run in one child process (isolation.py): a crash fails the test only.
    """
    inputs = problem.inputs("random", seed=0)
    check_arrays(inputs, problem.input_shapes, problem.dtype)
    return run_isolated(
        _time_interleaved,
        modules,
        problem,
        inputs,
        rounds,
        repeat,
        min_repeat_ms,
        what="a kernel timed side by side",
    )


def _time_interleaved(
    modules: dict[str, Any],
    problem: Matmul,
    inputs: list[np.ndarray],
    rounds: int,
    repeat: int,
    min_repeat_ms: int,
) -> Timings:
    evaluators = {
        name: module.get_evaluator(
            parameters=(inputs, [np.zeros(problem.output_shape, dtype=problem.dtype)]),
            repeat=repeat,
            min_repeat_ms=min_repeat_ms,
            validate=False,
        )
        for name, module in modules.items()
    }
    timings = Timings(rounds={name: [] for name in modules})
    for _ in range(rounds):
        for name, evaluator in evaluators.items():
            times, code, message = evaluator.evaluate()
            if code != 0 or not times:
                raise RuntimeError(f"timing {name} failed with code {code}: {message}")
            timings.rounds[name].append(min(times))
    timings.best = {name: min(values) for name, values in timings.rounds.items()}
    return timings


def percent_of_peak(fmas: int, seconds: float, peak_fmas_per_s: float, cores: int = 1) -> float:
    """Achieved FMA/s as a percentage of the cores' peak: information, never a floor."""
    return 100.0 * fmas / seconds / (peak_fmas_per_s * cores)
