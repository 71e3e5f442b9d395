"""Give MLIR learners the diagnostics TVM gives, before anything is compiled.

Scheduling primitives only record. TVM validates the recorded loop nest when it builds
the schedule; MLIR silently ignores an unknown axis name, an interchange that forgets an
axis, vectorizing a loop that is not innermost, and compiles a parallelized reduction
into racy code. `check_schedule` inspects `scheduler.get_loop_nest()` (the same
structure on both backends) and names the mistake and the fix.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from xtc_katas.checks.loop_nests import loop_axes
from xtc_katas.kata.failures import KataFailure, raise_mistakes

if TYPE_CHECKING:
    from xtc_katas.kata.problems import Problem


class ScheduleMistake(KataFailure):
    """A schedule that one backend would reject or silently miscompile."""


RACES = {"parallelize": "threads would race", "vectorize": "lanes would collide"}


def schedule_mistakes(scheduler: Any, problem: Problem) -> list[str]:
    """What is wrong with the recorded schedule of `problem`'s scheduled node, in words a
    learner can act on: its reductions are the problem's (Problem.reduction_axes)."""
    from xtc.schedules.exceptions import ScheduleValidationError

    try:
        loop_nest = scheduler.get_loop_nest()
    except Exception as exc:
        split = problem.vector_axis
        segments = [*(d for d in problem.dims if d != split), f"{split}0", f"{split}1"]
        raise ScheduleMistake(
            f"XTC cannot build a loop nest from this schedule ({type(exc).__name__}: {exc}). "
            f"After a split, the root interchange must name the segments (e.g. {segments!r} "
            f"for a split of {split!r}) and each segment needs its own interchange, e.g. "
            f'sch.interchange(["{split}"], root="./{split}1")'
        ) from exc
    dims = list(loop_nest.abstract_dims)
    axes = loop_axes(loop_nest)
    reductions = set(problem.reduction_axes)
    mistakes = []
    for node in loop_nest.nodes:
        where = "" if node.parent is None else f" (inside split segment {node.root})"
        for name in node.interchange:
            if name not in axes:
                mistakes.append(
                    f"interchange{where} names {name!r}, which is not a loop; the loops are "
                    f"{', '.join(axes)}; tile loops exist once strip_mine has created them"
                )
        for axis in list(node.tiles) + list(node.splits):
            if axis not in dims:
                mistakes.append(
                    f"strip_mine/split of axis {axis!r}{where}: there is no such axis; "
                    f"the axes are {', '.join(dims)}"
                )
        for kind in ("vectorize", "parallelize", "unroll"):
            for name in getattr(node, kind):
                if name in node.interchange:
                    continue
                if name in axes:  # made by strip_mine, then left out of the interchange
                    where_to = f", last: {[*node.interchange, name]}" if kind == "vectorize" else ""
                    mistakes.append(
                        f"{kind}({name!r}){where}: {name!r} is a loop (strip_mine made it), "
                        f"but the interchange {node.interchange} leaves it out: add "
                        f"{name!r} to the interchange{where_to}"
                    )
                else:
                    mistakes.append(
                        f"{kind}({name!r}){where}: {name!r} is not a loop of the interchange "
                        f"{node.interchange}; use one of those names"
                    )
        in_nest = all(name in node.interchange for name in node.vectorize)
        if in_nest and node.vectorize and node.vectorize != node.interchange[-1:]:
            mistakes.append(
                f"vectorize({node.vectorize}){where}: only the innermost loop "
                f"({node.interchange[-1]!r}) can be vectorized; put the vector tile last "
                "in the interchange"
            )
        for name in node.parallelize:
            for other in ("unroll", "vectorize"):
                if name in getattr(node, other):
                    mistakes.append(
                        f"parallelize({name!r}) and {other}({name!r}){where}: one loop cannot "
                        f"be both (MLIR fails to compile it): parallelize an outer loop and "
                        f"{other} an inner one"
                    )
        for kind, consequence in RACES.items():
            for name in getattr(node, kind):
                if axes.get(name) in reductions:
                    others = [d for d in dims if d not in reductions]
                    mistakes.append(
                        f"{kind}({name!r}){where}: {name!r} iterates the reduction axis "
                        f"{axes[name]!r}; every iteration adds into the same output element, "
                        f"so {consequence}. {kind.capitalize()} a loop over "
                        f"{' or '.join(others)} instead"
                    )
    try:
        loop_nest.check()
    except ScheduleValidationError as exc:
        message = str(exc).strip()
        if "never used" in message:
            message += " (every axis must appear in the interchange)"
        mistakes.append(message)
    return mistakes


def check_schedule(scheduler: Any, kata: str, function: str, problem: Problem) -> None:
    """Raise ScheduleMistake naming the kata, the function and each mistake of the
    schedule of `problem`'s scheduled node.

    `function` is a name ("schedule_split") or a fuller label ("candidate_specs() › 'x'").
    """
    label = function if "(" in function else f"{function}()"
    try:
        mistakes = schedule_mistakes(scheduler, problem)
    except ScheduleMistake as exc:
        raise ScheduleMistake(f"{kata} › {label}: {exc}") from exc.__cause__
    raise_mistakes(ScheduleMistake, f"{kata} › {label}: the schedule has mistakes", mistakes)
