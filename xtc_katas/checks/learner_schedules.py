"""Run a learner's schedule (kata 04) or spec (kata 05) on a fresh scheduler, then check it.

Both kinds end the same way: a scheduler whose recorded loop nest passed
`schedule_checks` (the diagnostics TVM gives, for MLIR too), ready to compile. Mistakes
raise `ScheduleMistake` with the kata, the function and the fix in the first line; when
XTC rejected something, its exception stays chained below the message.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

from xtc_katas.checks.schedule import ScheduleMistake, check_schedule
from xtc_katas.kata.manifest import Kata
from xtc_katas.kata.problems import Problem
from xtc_katas.measure.backends import KataBackend

DIMS = ["i", "j", "k"]


def fresh_scheduler(backend: KataBackend, problem: Problem) -> tuple[Any, Any]:
    """XTC's backend object for the harness's own graph, and a new scheduler of its matmul."""
    impl = backend.Backend(problem.graph(), **problem.backend_options(backend.name))
    return impl, impl.get_scheduler(default_node=problem.scheduled_node)


#: The scheduling primitives and descript annotations that fuse another node in.
FUSING = ("fuse_consumer_at", "fuse_producer_at")
FUSING_ANNOTATIONS = ("fuse_consumer", "fuse_producer")


class WithoutFusion:
    """A scheduler that ignores fusion: the same schedule, every node in its own nest.

    Kata 09 races a fused schedule against itself unfused; the learner's function runs
    once on the real scheduler and once on this wrapper.
    """

    def __init__(self, scheduler: Any) -> None:
        self._scheduler = scheduler

    def __getattr__(self, name: str) -> Any:
        if name in FUSING:
            return lambda *args, **kwargs: None
        return getattr(self._scheduler, name)


def without_fusion(spec: Any) -> Any:
    """A descript spec with its fusion annotations removed, at every depth."""
    if not isinstance(spec, dict):
        return spec
    return {
        key: without_fusion(value) for key, value in spec.items() if key not in FUSING_ANNOTATIONS
    }


class SchedulerRecorder:
    """Wraps an XTC Backend class; keeps each backend and scheduler a learner's code makes.

    For the functions that build their own schedule (kata 03's `compile_baseline`): the
    harness hands `recorder.Backend` in, then reads the loop nest that was compiled.
    """

    def __init__(self, backend_class: Any) -> None:
        self.made: list[tuple[Any, Any]] = []
        recorder = self

        class RecordingBackend:
            def __init__(self, *args: Any, **kwargs: Any) -> None:
                self._impl = backend_class(*args, **kwargs)

            def get_scheduler(self, *args: Any, **kwargs: Any) -> Any:
                scheduler = self._impl.get_scheduler(*args, **kwargs)
                recorder.made.append((self._impl, scheduler))
                return scheduler

            def __getattr__(self, name: str) -> Any:
                return getattr(self._impl, name)

        self.Backend = RecordingBackend

    @property
    def schedulers(self) -> list[Any]:
        return [scheduler for _, scheduler in self.made]

    def last(self) -> tuple[Any, Any]:
        if not self.made:
            raise LookupError(
                "no scheduler was made: build one with Backend(graph).get_scheduler()"
            )
        return self.made[-1]


def apply_schedule(
    kata: Kata,
    module: ModuleType,
    function: str,
    backend: KataBackend,
    problem: Problem,
    unfused: bool = False,
) -> tuple[Any, Any]:
    """Call `module.function(sch)` on a fresh scheduler; return (impl, checked scheduler).
    `unfused`: the function's fusion calls are ignored (WithoutFusion)."""
    impl, scheduler = fresh_scheduler(backend, problem)
    schedule_fn: Callable[[Any], Any] = getattr(module, function)
    returned = schedule_fn(WithoutFusion(scheduler) if unfused else scheduler)
    if returned is not None:
        raise ScheduleMistake(
            f"{kata.id} › {function}(sch) returned a {type(returned).__name__}: it must "
            "call primitives on `sch` (sch.interchange(...), sch.vectorize(...)) and return "
            "None. The harness compiles `sch` itself, so a returned value is ignored"
        )
    check_schedule(scheduler, kata.id, function, problem.reduction_axes)
    return impl, scheduler


def apply_task(
    kata: Kata,
    module: ModuleType,
    function: str,
    backend: KataBackend,
    problem: Problem,
    unfused: bool = False,
) -> tuple[Any, Any]:
    """A task's function of kind "schedule" (f(sch)), "spec" (f() -> spec) or "strategy"
    (its first sample), applied on a fresh scheduler of `problem` and checked (the
    manifest's `kind` says which).
    `unfused`: the same schedule with its fusion left out (kata 09's baseline)."""
    task = kata.task(function)
    kind = task.kind if task else ""
    if kind == "schedule":
        return apply_schedule(kata, module, function, backend, problem, unfused)
    if kind == "spec":
        return apply_spec(kata, module, function, backend, problem, unfused)
    if kind == "strategy":
        return apply_strategy(kata, module, function, backend, problem)
    raise LookupError(
        f"{kata.id}.{function} is of kind {kind!r}: only a task of kind 'schedule', 'spec' "
        "or 'strategy' builds a schedule on its own (katas/manifest.toml)"
    )


#: The sample a task of kind "strategy" is raced with: the first one of this seed.
STRATEGY_SEED = 0


def apply_strategy(
    kata: Kata, module: ModuleType, function: str, backend: KataBackend, problem: Problem
) -> tuple[Any, Any]:
    """`module.function(graph)` returns an XTC strategy; its first sample of seed
    STRATEGY_SEED, generated on a fresh scheduler and checked: one sampled schedule."""
    strategy = getattr(module, function)(problem.graph())
    if isinstance(strategy, type):
        raise ScheduleMistake(
            f"{kata.id} › {function}(graph) returned the class {strategy.__name__} itself: "
            f"return an instance, {strategy.__name__}(graph, vec_size=..., max_unroll=..., "
            "threads=1)"
        )
    if not (hasattr(strategy, "sample") and hasattr(strategy, "generate")):
        raise ScheduleMistake(
            f"{kata.id} › {function}(graph) returned a {type(strategy).__name__}, not a "
            "strategy: return an instance of a class from xtc.search.strategies"
        )
    sample = next(iter(strategy.sample(1, STRATEGY_SEED)))
    impl, scheduler = fresh_scheduler(backend, problem)
    strategy.generate(scheduler, list(sample))
    check_schedule(scheduler, kata.id, function, problem.reduction_axes)
    return impl, scheduler


def apply_large(
    kata: Kata, module: ModuleType, backend: KataBackend, problem: Problem, threads: int
) -> tuple[Any, Any]:
    """Kata 08: `module.schedule_large(sch, threads)` on a fresh scheduler, then checked."""
    impl, scheduler = fresh_scheduler(backend, problem)
    returned = module.schedule_large(scheduler, threads)
    if returned is not None:
        raise ScheduleMistake(
            f"{kata.id} › schedule_large(sch, threads) returned a {type(returned).__name__}: "
            "it must apply the schedule to `sch` and return None"
        )
    check_schedule(scheduler, kata.id, "schedule_large", problem.reduction_axes)
    return impl, scheduler


def apply_spec(
    kata: Kata,
    module: ModuleType,
    function: str,
    backend: KataBackend,
    problem: Problem,
    unfused: bool = False,
) -> tuple[Any, Any]:
    """Apply the dict `module.function()` returns with descript_scheduler; check the result.
    `unfused`: without its fusion annotations (without_fusion)."""
    spec = getattr(module, function)()
    if not isinstance(spec, dict):
        raise ScheduleMistake(
            f"{kata.id} › {function}() returned a {type(spec).__name__}, not a dict: return "
            'the spec itself, e.g. {"i": {}, "k": {}, "j": {}, "j#16": {"vectorize": True}}'
        )
    if unfused:
        spec = without_fusion(spec)
    return schedule_spec(kata, spec, f"{function}()", backend, problem)


def schedule_spec(
    kata: Kata, spec: dict, label: str, backend: KataBackend, problem: Problem
) -> tuple[Any, Any]:
    """descript_scheduler on a fresh scheduler, then the schedule checks.

    `label` says where the spec came from in messages: "split_spec()", or
    "candidate_specs() › '4x16 tile'".
    """
    from xtc.schedules.descript import descript_scheduler
    from xtc.schedules.exceptions import (
        ScheduleInterpretError,
        ScheduleParseError,
        ScheduleValidationError,
    )

    impl, scheduler = fresh_scheduler(backend, problem)
    try:
        descript_scheduler(scheduler=scheduler, node_name="C", abstract_dims=DIMS, spec=spec)
    except (ScheduleParseError, ScheduleInterpretError, ScheduleValidationError) as exc:
        raise ScheduleMistake(
            f"{kata.id} › {label}: descript_scheduler rejected the spec with "
            f"{type(exc).__name__}: {exc}\n  the spec: {spec!r}\n  Keys are loops, outer to "
            'inner: an axis ("i"), a tile ("j#16"), a split segment ("j[0:32]") holding its '
            "own nested spec"
        ) from exc
    check_schedule(scheduler, kata.id, label, problem.reduction_axes)
    return impl, scheduler
