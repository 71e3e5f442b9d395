"""The times a learner's own code got from XTC's evaluators, kept as it runs.

A learner's figure (kata 03's `percent_of_peak_of`, the searches of katas 06 and 07) comes
from timings their code made. Timing the kernel again to check it compares two moments of
a shared machine: on an AMD EPYC family 23 model 1 (2-vCPU KVM guest), one TVM kernel read
146 us or 230-320 us per call for seconds at a time, and CI failed a right search at 1.55x
the harness's reading. Wrapping the module the learner's code evaluates keeps the very
times their figure must come from, so the check is exact on any machine.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

#: How far a figure may sit outside the range of its own times: float rounding, no more.
ROUNDING = 1.01


class TimedEvaluator:
    """An XTC evaluator that appends the times of every successful evaluate() to `log`."""

    def __init__(self, evaluator: Any, log: list[float]) -> None:
        self._evaluator = evaluator
        self._log = log

    def evaluate(self, *args: Any, **kwargs: Any) -> Any:
        result = self._evaluator.evaluate(*args, **kwargs)
        with contextlib.suppress(TypeError, ValueError):
            times, code, _ = result
            if code == 0:
                self._log.extend(float(t) for t in times)
        return result

    def __getattr__(self, name: str) -> Any:
        return getattr(self._evaluator, name)


class TimedModule:
    """A compiled XTC module whose evaluators log their times; everything else is the
    module's own."""

    def __init__(self, module: Any, log: list[float]) -> None:
        self._module = module
        self._log = log

    def get_evaluator(self, *args: Any, **kwargs: Any) -> Any:
        return TimedEvaluator(self._module.get_evaluator(*args, **kwargs), self._log)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._module, name)


def call_observing(function: Callable[..., Any], module: Any, *args: Any) -> tuple[Any, list]:
    """`function(module, *args)` and the times its evaluators of `module` returned."""
    log: list[float] = []
    return function(TimedModule(module, log), *args), log


def within_own_times(
    figure: float, times: list[float], to_figure: Callable[[float], float]
) -> bool:
    """Whether `figure` comes from `times`: between the figures of the slowest and the
    fastest (a mean or a median lies between; a sum, a factor 2 or 100 does not).
    `to_figure` turns seconds into the figure (a % of peak: faster is higher)."""
    slowest, fastest = to_figure(max(times)), to_figure(min(times))
    return slowest / ROUNDING <= figure <= fastest * ROUNDING
