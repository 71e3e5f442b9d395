"""The times a learner's own code got from XTC's evaluators, kept as it runs.

A learner's figure (kata 03's `percent_of_peak_of`, the searches of katas 06 and 07) comes
from timings their code made. Timing the kernel again to check it compares two moments of
a shared machine: on an AMD EPYC family 23 model 1 (2-vCPU KVM guest), one TVM kernel read
146 us or 230-320 us per call for seconds at a time, and CI failed a right search at 1.55x
the harness's reading. Wrapping the module the learner's code evaluates keeps the very
times their figure must come from, so the check is exact on any machine.

The wrapped module and evaluator live in closures, not in attributes: an outside learner's
answer that reached past the wrapper (`module._module`) to time the kernel unseen, then
reported 2.5x its figure, passed kata 03 (issue 20). Reaching into a closure is tampering,
as monkeypatching the harness is.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

#: How far a figure may sit outside the range of its own times: float rounding, no more.
ROUNDING = 1.01


@dataclass
class Observation:
    """What a learner's code did with one compiled module: the times its XTC evaluators
    returned (successful runs only), and how many ways to run it (an evaluator, an
    executor) it asked for. A figure reported for a module never run was made up."""

    times: list[float] = field(default_factory=list)
    runs: int = 0


def timed_evaluator(evaluator: Any, observation: Observation) -> Any:
    """An XTC evaluator that adds the times of every successful evaluate() to
    `observation`; every other attribute is the evaluator's own."""

    class TimedEvaluator:
        __slots__ = ()

        def evaluate(self, *args: Any, **kwargs: Any) -> Any:
            result = evaluator.evaluate(*args, **kwargs)
            with contextlib.suppress(TypeError, ValueError):
                times, code, _ = result
                if code == 0:
                    observation.times.extend(float(t) for t in times)
            return result

        def __getattr__(self, name: str) -> Any:
            return getattr(evaluator, name)

    return TimedEvaluator()


def timed_module(module: Any, observation: Observation) -> Any:
    """A compiled XTC module whose evaluators log their times in `observation`, and whose
    evaluators and executors count as runs; everything else is the module's own."""

    class TimedModule:
        __slots__ = ()

        def get_evaluator(self, *args: Any, **kwargs: Any) -> Any:
            observation.runs += 1
            return timed_evaluator(module.get_evaluator(*args, **kwargs), observation)

        def get_executor(self, *args: Any, **kwargs: Any) -> Any:
            observation.runs += 1
            return module.get_executor(*args, **kwargs)

        def __getattr__(self, name: str) -> Any:
            return getattr(module, name)

    return TimedModule()


def call_observing(
    function: Callable[..., Any], module: Any, *args: Any
) -> tuple[Any, Observation]:
    """`function(module, *args)` and what it did with `module` (its times, its runs)."""
    observation = Observation()
    return function(timed_module(module, observation), *args), observation


def within_own_times(
    figure: float, times: list[float], to_figure: Callable[[float], float]
) -> bool:
    """Whether `figure` comes from `times`: between the figures of the slowest and the
    fastest (a mean or a median lies between; a sum, a factor 2 or 100 does not).
    `to_figure` turns seconds into the figure (a % of peak: faster is higher)."""
    slowest, fastest = to_figure(max(times)), to_figure(min(times))
    return slowest / ROUNDING <= figure <= fastest * ROUNDING
