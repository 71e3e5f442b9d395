"""What a learner's code did with the objects the harness handed it, kept as it runs.

A learner's figure (kata 03's `percent_of_peak_of`, the searches of katas 06 and 07) is
checked against the very times their code made (`within_own_times`): timing the kernel
again would compare two moments of a shared machine. So the harness hands their code a
`Proxy` (of the module, Backend, compiler, evaluator) that notes what it called and got.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from xtc_katas.measure import wire

#: How far a figure may sit outside the range of its own times: float rounding, no more.
ROUNDING = 1.01


class Proxy:
    """Stands for `target`: every attribute is the target's own, except the methods named
    in `hooks`, each called as `hook(the_target_method, *args, **kwargs)`. A proxy of a
    class (a Backend) is called like the class."""

    __slots__ = ("_hooks", "_target")

    def __init__(self, target: Any, **hooks: Callable[..., Any]) -> None:
        object.__setattr__(self, "_target", target)
        object.__setattr__(self, "_hooks", hooks)

    def __getattr__(self, name: str) -> Any:
        found = getattr(self._target, name)
        hook = self._hooks.get(name)
        if hook is None:
            return found

        @functools.wraps(found)
        def hooked(*args: Any, **kwargs: Any) -> Any:
            __tracebackhide__ = True  # pytest shows the learner's line and XTC's frames
            return hook(found, *args, **kwargs)

        return hooked

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.__getattr__("__call__")(*args, **kwargs)

    def __str__(self) -> str:
        return str(self._target)


@wire.record  # a probe's figures come back with what it saw (kata 03's, a search's)
@dataclass
class Observation:
    """What a learner's code did with one compiled module: the times its XTC evaluators
    returned (successful runs only), and how many ways to run it (an evaluator, an
    executor) it asked for. A figure reported for a module never run was made up."""

    times: list[float] = field(default_factory=list)
    runs: int = 0


def timed_module(module: Any, observation: Observation) -> Proxy:
    """A compiled XTC module whose evaluators log their times in `observation`, and whose
    evaluators and executors count as runs."""

    def evaluate(evaluate: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        result = evaluate(*args, **kwargs)
        with contextlib.suppress(TypeError, ValueError):
            times, code, _ = result
            if code == 0:
                observation.times.extend(float(t) for t in times)
        return result

    def run(make: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        observation.runs += 1
        return make(*args, **kwargs)

    def evaluator(make: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        return Proxy(run(make, *args, **kwargs), evaluate=evaluate)

    return Proxy(module, get_evaluator=evaluator, get_executor=run)


def within_own_times(
    figure: float, times: list[float], to_figure: Callable[[float], float]
) -> bool:
    """Whether `figure` comes from `times`: between the figures of the slowest and the
    fastest (a mean or a median lies between; a sum, a factor 2 or 100 does not).
    `to_figure` turns seconds into the figure (a % of peak: faster is higher)."""
    slowest, fastest = to_figure(max(times)), to_figure(min(times))
    return slowest / ROUNDING <= figure <= fastest * ROUNDING
