"""A schedule from plain data, checked before anything is compiled.

A learner's function gives the harness plain data (checks/learner.py): the primitive
calls it made on a recording scheduler (`Call`), or a descript spec, which the harness
builds again on a fresh scheduler (`replay`, `schedule_spec`). `check_schedule` then
reads the loop nest, the same on both backends, and names each mistake and its fix: TVM
rejects some of them, but MLIR silently ignores an unknown axis or an interchange that
forgets one, and compiles a parallelized reduction into racy code.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

from xtc_katas.checks.loop_nests import loop_axes
from xtc_katas.kata.failures import KataFailure, raise_mistakes
from xtc_katas.measure import wire
from xtc_katas.measure.observed import Proxy

if TYPE_CHECKING:
    from xtc_katas.kata.problems import Problem
    from xtc_katas.measure.backends import KataBackend


class ScheduleMistake(KataFailure):
    """A schedule that one backend would reject or silently miscompile."""


def fresh_scheduler(backend: KataBackend, problem: Problem) -> tuple[Any, Any]:
    """XTC's backend object for the harness's own graph, and a new scheduler of the node
    it schedules (problem.scheduled_node)."""
    impl = backend.Backend(problem.graph(), **problem.backend_options(backend.name))
    return impl, impl.get_scheduler(default_node=problem.scheduled_node)


#: The scheduling primitives and descript annotations that fuse another node in: kata
#: 09's baseline is the learner's schedule without them.
FUSING = ("fuse_consumer_at", "fuse_producer_at")
FUSING_ANNOTATIONS = ("fuse_consumer", "fuse_producer")
#: What a scheduler does that reads rather than schedules: never recorded.
READ_ONLY = ("get_loop_nest", "schedule")
#: A primitive's name: a public method's (recording records no other).
PRIMITIVE = re.compile(r"[a-z][a-z0-9_]{0,63}")
#: Every string a call holds: a loop's name, or a root path ("./j0", "C/i0"). XTC 0.3.2's
#: TVM backend writes loop names unquoted into Python it exec()s in the harness
#: (TVMScheduler, TVMOpsCompiler._exec_schedule): a name such as `globals()[exec(...)]`
#: ran the learner's code there (the outside red team's round 2). No call, quote, space
#: or attribute can be spelled with these. A split's segments are named `i[0]` by
#: descript (xtc/schedules/descript.py), which kata 08's specs go through.
_NAME = r"[A-Za-z_][A-Za-z0-9_]{0,63}(\[[0-9]{1,6}\])?"
LOOP_TEXT = re.compile(rf"(\.|{_NAME})(/{_NAME}){{0,16}}")


def _texts(value: Any) -> list[str]:
    """Every string in a call's arguments, dict keys included, at any depth."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [t for k, v in value.items() for t in (*_texts(k), *_texts(v))]
    if isinstance(value, (list, tuple)):
        return [t for item in value for t in _texts(item)]
    return []


@wire.record
@dataclass(frozen=True)
class Call:
    """One primitive call a learner's schedule function made on `sch`, as it was made."""

    name: str
    args: tuple
    kwargs: dict

    def __post_init__(self) -> None:
        """A call that crossed from the learner's worker is replayed by name on the
        harness's scheduler: only a public method that `recording` records is named."""
        if not (type(self.name) is str and PRIMITIVE.fullmatch(self.name)) or (
            self.name in READ_ONLY
        ):
            raise ValueError(f"{str(self.name)[:40]!r} is not a primitive of XTC's scheduler")
        if type(self.args) is not tuple or type(self.kwargs) is not dict:
            raise ValueError(f"{self.name}'s arguments are not a tuple and a dict")
        if not all(type(key) is str for key in self.kwargs):
            raise ValueError(f"{self.name}'s keyword arguments are not named by strings")
        for text in _texts((self.args, self.kwargs)):
            if not LOOP_TEXT.fullmatch(text):
                raise ValueError(
                    f"{text[:40]!r} is not a loop's name (letters, digits and _) nor a root "
                    "such as './j0'"
                )


def recording(scheduler: Any, label: str) -> tuple[Proxy, list[Call]]:
    """What a learner's f(sch) receives: `scheduler` itself, each primitive call recorded
    in the list returned alongside once XTC accepted it (XTC's own errors surface at the
    learner's line). `label` ("09_fusion › schedule_fused") names the function."""
    calls: list[Call] = []

    def primitive(method: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            made = Call(method.__name__, copy.deepcopy(args), copy.deepcopy(kwargs))
        except Exception as exc:
            raise ScheduleMistake(
                f"{label}(sch): sch.{method.__name__}() got an argument the harness cannot "
                f"record ({type(exc).__name__}: {exc}): pass lists, dicts, strings and numbers"
            ) from exc
        result = method(*args, **kwargs)
        calls.append(made)
        return result

    names = [n for n in dir(type(scheduler)) if not n.startswith("_") and n not in READ_ONLY]
    hooks = {n: primitive for n in names if callable(getattr(type(scheduler), n))}
    return Proxy(scheduler, **hooks), calls


def replay(
    calls: list[Call], backend: KataBackend, problem: Problem, unfused: bool = False
) -> tuple[Any, Any]:
    """The recorded calls on a fresh scheduler: (impl, scheduler). `unfused`: without the
    fusion calls (FUSING), every node in its own nest: kata 09's baseline."""
    impl, scheduler = fresh_scheduler(backend, problem)
    for call in calls:
        if not (unfused and call.name in FUSING):
            getattr(scheduler, call.name)(*copy.deepcopy(call.args), **copy.deepcopy(call.kwargs))
    return impl, scheduler


def without_fusion(spec: Any) -> Any:
    """A descript spec with its fusion annotations removed, at every depth."""
    if not isinstance(spec, dict):
        return spec
    return {
        key: without_fusion(value) for key, value in spec.items() if key not in FUSING_ANNOTATIONS
    }


def nest_signature(scheduler: Any) -> list[tuple[Any, ...]]:
    """The loop nest `scheduler` records, as plain values (its abstract dims, then each
    node's fields but its links to the others): equal signatures, the same schedule."""
    loop_nest = scheduler.get_loop_nest()
    nodes = [
        tuple(getattr(node, f.name) for f in fields(node) if f.name not in ("parent", "children"))
        for node in loop_nest.nodes
    ]
    return [tuple(loop_nest.abstract_dims), *nodes]


def schedule_spec(
    kata: str, spec: dict, label: str, backend: KataBackend, problem: Problem
) -> tuple[Any, Any]:
    """descript_scheduler on a fresh scheduler, then the schedule checks. `label` says
    where the spec came from: "split_spec()", "candidate_specs() › '4x16 tile'"."""
    from xtc.schedules.descript import descript_scheduler
    from xtc.schedules.exceptions import (
        ScheduleInterpretError,
        ScheduleParseError,
        ScheduleValidationError,
    )

    impl, scheduler = fresh_scheduler(backend, problem)
    try:
        descript_scheduler(
            scheduler=scheduler,
            node_name=problem.scheduled_node,
            abstract_dims=problem.dims,
            spec=spec,
        )
    except (ScheduleParseError, ScheduleInterpretError, ScheduleValidationError) as exc:
        stop = re.search(r"Splitting of (\w+) unachieved \(stops at (\d+)\)", str(exc))
        open_end = (
            f"\n  XTC 0.3.2's descript is not told the axes' sizes: a last segment that ends "
            f'at {stop[2]} reads as stopping short. End it open: "{stop[1]}[N:]"'
            if stop and problem.axis_sizes.get(stop[1]) == int(stop[2])
            else ""
        )
        raise ScheduleMistake(
            f"{kata} › {label}: descript_scheduler rejected the spec with "
            f"{type(exc).__name__}: {exc}\n  the spec: {spec!r}\n  Keys are loops, outer to "
            f'inner: an axis ("{problem.dims[-1]}"), a tile ("{problem.dims[-1]}#8"), a split '
            f'segment ("{problem.dims[0]}[0:2]") holding its own nested spec' + open_end
        ) from exc
    check_schedule(scheduler, kata, label, problem)
    return impl, scheduler


def unbuilt(exc: Exception) -> str:
    """Why XTC could not build the loop nest. XTC 0.3.2 builds it node by node (the root,
    then each split segment, named "C/j1"), looking each node's interchange up by that
    name (schedules/loop_nest_builder.py): a KeyError naming a segment says that segment
    has none."""
    key = str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else ""
    _, _, segment = key.partition("/")
    if not segment:
        return f"XTC cannot build a loop nest from this schedule ({type(exc).__name__}: {exc})"
    return (
        f"split segment {segment.rsplit('/', 1)[-1]!r} has no interchange of its own, so XTC "
        f"cannot build the loop nest (KeyError: {exc}). Give it one, naming the loops inside "
        f'it (there the split axis keeps its own name): sch.interchange([...], root="./{segment}")'
    )


RACES = {"parallelize": "threads would race", "vectorize": "lanes would collide"}


def schedule_mistakes(scheduler: Any, problem: Problem) -> list[str]:
    """What is wrong with the recorded schedule of `problem`'s scheduled node, in words a
    learner can act on: its reductions are the problem's (Problem.reduction_axes)."""
    return _mistakes(scheduler, problem)[0]


def _mistakes(scheduler: Any, problem: Problem) -> tuple[list[str], Exception | None]:
    """schedule_mistakes, and the error of XTC's own check of the loop nest. XTC's words
    are a mistake only where the harness named none: beside the harness's, they tell the
    same mistake in terms of XTC's loops ("Inner loop k isn't vectorized but an outer one
    is", for a vectorized block loop j), so they stay in the report, under pytest -v."""
    from xtc.schedules.exceptions import ScheduleValidationError

    try:
        loop_nest = scheduler.get_loop_nest()
    except Exception as exc:
        raise ScheduleMistake(unbuilt(exc)) from exc
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
            innermost = node.interchange[-1]
            mistakes.append(
                f"vectorize({node.vectorize}){where}: only the innermost loop, "
                f"{innermost!r}, can be vectorized: vectorize that loop by its own name "
                f"(and if {innermost!r} is not the vector tile, put the vector tile last "
                "in the interchange)"
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
        return mistakes or [message], exc
    except Exception as exc:  # XTC's own check tripped on a mistake named above
        told = f"XTC's check of the loop nest failed: {type(exc).__name__}: {exc}"
        return mistakes or [told], exc
    return mistakes, None


def check_schedule(scheduler: Any, kata: str, function: str, problem: Problem) -> None:
    """Raise ScheduleMistake naming the kata, `function` (a name, "schedule_split", or a
    label, "candidate_specs() › 'x'") and each mistake of the schedule."""
    label = function if "(" in function else f"{function}()"
    try:
        mistakes, xtc_error = _mistakes(scheduler, problem)
    except ScheduleMistake as exc:
        raise ScheduleMistake(f"{kata} › {label}: {exc}") from exc.__cause__
    try:
        raise_mistakes(ScheduleMistake, f"{kata} › {label}: the schedule has mistakes", mistakes)
    except ScheduleMistake as exc:
        raise exc from xtc_error
