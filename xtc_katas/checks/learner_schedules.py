"""Run a learner's function on a fresh scheduler, then check the schedule: one class per
kind of task (the manifest's `kind`), in one registry, KINDS, at the end of this file.

A schedule (kata 04) and a spec (kata 05) end the same way: a scheduler whose recorded
loop nest passed `schedule_checks` (the diagnostics TVM gives, for MLIR too), ready to
compile. Mistakes
raise `ScheduleMistake` with the kata, the function and the fix in the first line; when
XTC rejected something, its exception stays chained below the message.

The learner's function runs once per kernel judged. A schedule function gets a recording
`sch` (recording_scheduler); the harness compiles the recorded calls replayed on a fresh
scheduler, and kata 09's baseline, "the same schedule unfused", is that record replayed
without its fusion calls (apply_schedule_pair); a spec is read once and its fusion
annotations dropped from a copy. The baseline is thus the learner's schedule minus
fusion, whatever the learner's code does.
"""

from __future__ import annotations

import argparse
import copy
import functools
import hashlib
import importlib.util
import inspect
import re
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any, ClassVar

from xtc_katas import ROOT
from xtc_katas.checks.schedule import ScheduleMistake, check_schedule
from xtc_katas.kata.manifest import Kata, Task
from xtc_katas.kata.problems import Problem
from xtc_katas.measure.backends import KataBackend
from xtc_katas.measure.workdir import Workdir


def fresh_scheduler(backend: KataBackend, problem: Problem) -> tuple[Any, Any]:
    """XTC's backend object for the harness's own graph, and a new scheduler of the node
    it schedules (problem.scheduled_node)."""
    impl = backend.Backend(problem.graph(), **problem.backend_options(backend.name))
    return impl, impl.get_scheduler(default_node=problem.scheduled_node)


#: The scheduling primitives and descript annotations that fuse another node in.
FUSING = ("fuse_consumer_at", "fuse_producer_at")
FUSING_ANNOTATIONS = ("fuse_consumer", "fuse_producer")

#: What a learner's `sch` passes to XTC's scheduler without recording it: it reads, it
#: does not schedule. Every other public method of the scheduler is a primitive, recorded.
READ_ONLY = ("get_loop_nest", "schedule")


@dataclass(frozen=True)
class Call:
    """One primitive call a learner's schedule function made on `sch`, as it was made."""

    name: str
    args: tuple
    kwargs: dict

    def apply(self, scheduler: Any) -> None:
        getattr(scheduler, self.name)(*copy.deepcopy(self.args), **copy.deepcopy(self.kwargs))

    def __str__(self) -> str:
        shown = [repr(a) for a in self.args] + [f"{k}={v!r}" for k, v in self.kwargs.items()]
        return f"sch.{self.name}({', '.join(shown)})"


def recording_scheduler(scheduler: Any, label: str) -> tuple[Any, list[Call]]:
    """What a learner's f(sch) receives: `scheduler`'s primitives, each forwarded to it
    (XTC's own errors surface at the learner's line) and, once it returned, recorded in
    the list returned alongside.

    The harness then builds its kernels from the record alone (`replay`): the schedule as
    called and, for kata 09's baseline, the same calls without fusion. One call of the
    learner's function gives both, so nothing in it can tell them apart. `scheduler` and
    the record live in this closure, not on `sch`: `sch` has no attributes of its own.
    `label` ("09_fusion › schedule_fused") names the function in messages.
    """
    calls: list[Call] = []

    def primitive(name: str) -> Callable[..., Any]:
        @functools.wraps(getattr(type(scheduler), name))
        def forward(self: Any, *args: Any, **kwargs: Any) -> Any:
            __tracebackhide__ = True  # pytest shows the learner's line and XTC's frames
            try:
                recorded = Call(name, copy.deepcopy(args), copy.deepcopy(kwargs))
            except Exception as exc:
                raise ScheduleMistake(
                    f"{label}(sch): sch.{name}() got an argument the harness cannot record "
                    f"({type(exc).__name__}: {exc}): pass lists, dicts, strings and numbers"
                ) from exc
            result = getattr(scheduler, name)(*args, **kwargs)
            calls.append(recorded)
            return result

        return forward

    def read(name: str) -> Callable[..., Any]:
        @functools.wraps(getattr(type(scheduler), name))
        def forward(self: Any, *args: Any, **kwargs: Any) -> Any:
            __tracebackhide__ = True
            return getattr(scheduler, name)(*args, **kwargs)

        return forward

    names = [
        name
        for name, _ in inspect.getmembers(type(scheduler), inspect.isfunction)
        if not name.startswith("_")
    ]
    namespace: dict[str, Any] = {
        name: read(name) if name in READ_ONLY else primitive(name) for name in names
    }
    namespace.update(
        __slots__=(),
        __doc__=f"XTC's scheduler of the node to schedule: call its primitives ({label}).",
        __module__=__name__,
        __str__=lambda self: str(scheduler),
        backend=property(lambda self: scheduler.backend, doc="XTC's backend of `sch`."),
    )
    return type("Scheduler", (), namespace)(), calls


def replay(
    calls: list[Call], backend: KataBackend, problem: Problem, unfused: bool = False
) -> tuple[Any, Any]:
    """The recorded calls on a fresh scheduler: (impl, scheduler). `unfused`: without the
    fusion calls (FUSING), every node in its own nest: kata 09's baseline."""
    impl, scheduler = fresh_scheduler(backend, problem)
    for call in calls:
        if not (unfused and call.name in FUSING):
            call.apply(scheduler)
    return impl, scheduler


def nest_signature(scheduler: Any) -> list[tuple[Any, ...]]:
    """The loop nest `scheduler` records, as plain values (one tuple per node, its
    abstract dims first): equal signatures, the same schedule."""
    loop_nest = scheduler.get_loop_nest()
    fields = (
        "root",
        "tiles",
        "splits",
        "interchange",
        "vectorize",
        "parallelize",
        "unroll",
        "buffer_at",
        "pack_at",
        "fuse_producer_at",
        "fuse_consumer_at",
        "external_at",
    )
    nodes = [tuple(getattr(node, field, None) for field in fields) for node in loop_nest.nodes]
    return [tuple(loop_nest.abstract_dims), *nodes]


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


def record_schedule(
    kata: Kata, module: ModuleType, function: str, backend: KataBackend, problem: Problem
) -> tuple[list[Call], tuple[Any, Any]]:
    """Call `module.function(sch)` once, on a recording scheduler: (its calls, the calls
    replayed on a fresh scheduler). The replay is what the harness compiles; it must
    record the same loop nest as the scheduler the function drove."""
    _, scheduler = fresh_scheduler(backend, problem)
    sch, calls = recording_scheduler(scheduler, f"{kata.id} › {function}")
    schedule_fn: Callable[[Any], Any] = getattr(module, function)
    returned = schedule_fn(sch)
    if returned is not None:
        raise ScheduleMistake(
            f"{kata.id} › {function}(sch) returned a {type(returned).__name__}: it must "
            "call primitives on `sch` (sch.interchange(...), sch.vectorize(...)) and return "
            "None. The harness compiles `sch` itself, so a returned value is ignored"
        )
    impl, replayed = replay(calls, backend, problem)
    try:
        same = nest_signature(scheduler) == nest_signature(replayed)
    except Exception:  # no loop nest: check_schedule names the mistake
        same = True
    if not same:
        raise ScheduleMistake(
            f"{kata.id} › {function}(sch): the schedule `sch` holds is not the one its "
            "primitive calls make, replayed on a fresh scheduler (the harness compiles the "
            "replay). Call the primitives on `sch` only, and let a call that raises fail "
            "the function (no try/except around one)"
        )
    return calls, (impl, replayed)


def replay_unfused(
    kata: Kata, function: str, calls: list[Call], backend: KataBackend, problem: Problem
) -> tuple[Any, Any]:
    """The recorded calls without their fusion (kata 09's baseline): (impl, scheduler)."""
    try:
        return replay(calls, backend, problem, unfused=True)
    except Exception as exc:
        raise ScheduleMistake(
            f"{kata.id} › {function}(sch): the same calls without fuse_consumer_at/"
            f"fuse_producer_at (the schedule unfused, that yours races) fail in XTC with "
            f"{type(exc).__name__}: {exc}. Make every other call stand without the fusion"
        ) from exc


def apply_schedule(
    kata: Kata,
    module: ModuleType,
    function: str,
    backend: KataBackend,
    problem: Problem,
    unfused: bool = False,
) -> tuple[Any, Any]:
    """Call `module.function(sch)` once (record_schedule); return (impl, checked
    scheduler) of its calls replayed. `unfused`: replayed without their fusion calls."""
    calls, built = record_schedule(kata, module, function, backend, problem)
    if unfused:
        built = replay_unfused(kata, function, calls, backend, problem)
    check_schedule(built[1], kata.id, function, problem)
    return built


def apply_schedule_pair(
    kata: Kata, module: ModuleType, function: str, backend: KataBackend, problem: Problem
) -> tuple[tuple[Any, Any], tuple[Any, Any]]:
    """One call of `module.function(sch)`, two checked (impl, scheduler): its calls
    replayed as made, and without their fusion calls."""
    calls, fused = record_schedule(kata, module, function, backend, problem)
    check_schedule(fused[1], kata.id, function, problem)
    unfused = replay_unfused(kata, function, calls, backend, problem)
    check_schedule(unfused[1], kata.id, function, problem)
    return fused, unfused


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
    check_schedule(scheduler, kata.id, function, problem)
    return impl, scheduler


def apply_large(
    kata: Kata,
    module: ModuleType,
    function: str,
    backend: KataBackend,
    problem: Problem,
    threads: int,
) -> tuple[Any, Any]:
    """A task of kind "large" (kata 08): `module.function(sch, threads)` on a fresh
    scheduler, then checked."""
    impl, scheduler = fresh_scheduler(backend, problem)
    returned = getattr(module, function)(scheduler, threads)
    if returned is not None:
        raise ScheduleMistake(
            f"{kata.id} › {function}(sch, threads) returned a {type(returned).__name__}: "
            "it must apply the schedule to `sch` and return None"
        )
    check_schedule(scheduler, kata.id, function, problem)
    return impl, scheduler


def plain(value: Any) -> Any:
    """A deep copy of a spec made of plain dicts, lists and tuples (a dict subclass's
    own items() is never asked): what the harness builds is what it read, once."""
    if isinstance(value, dict):
        return {plain(key): plain(item) for key, item in dict.items(value)}
    if isinstance(value, (list, tuple)):
        base = list if isinstance(value, list) else tuple
        return base(plain(item) for item in base.__iter__(value))
    return copy.deepcopy(value)


def learner_spec(kata: Kata, module: ModuleType, function: str, problem: Problem) -> dict:
    """The dict `module.function()` returns (called once), as a plain deep copy."""
    spec = getattr(module, function)()
    if not isinstance(spec, dict):
        vector = problem.vector_axis
        example: dict[str, dict] = {dim: {} for dim in problem.dims if dim != vector}
        example |= {vector: {}, f"{vector}#16": {"vectorize": True}}
        raise ScheduleMistake(
            f"{kata.id} › {function}() returned a {type(spec).__name__}, not a dict: return "
            f"the spec itself, e.g. {example!r}"
        )
    return plain(spec)


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
    spec = learner_spec(kata, module, function, problem)
    if unfused:
        spec = without_fusion(spec)
    return schedule_spec(kata, spec, f"{function}()", backend, problem)


def apply_spec_pair(
    kata: Kata, module: ModuleType, function: str, backend: KataBackend, problem: Problem
) -> tuple[tuple[Any, Any], tuple[Any, Any]]:
    """One call of `module.function()`, two checked (impl, scheduler): its spec, and the
    same dict without its fusion annotations."""
    spec = learner_spec(kata, module, function, problem)
    unfused = without_fusion(copy.deepcopy(spec))
    return (
        schedule_spec(kata, spec, f"{function}()", backend, problem),
        schedule_spec(kata, unfused, f"{function}()", backend, problem),
    )


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
        descript_scheduler(
            scheduler=scheduler,
            node_name=problem.scheduled_node,
            abstract_dims=problem.dims,
            spec=spec,
        )
    except (ScheduleParseError, ScheduleInterpretError, ScheduleValidationError) as exc:
        raise ScheduleMistake(
            f"{kata.id} › {label}: descript_scheduler rejected the spec with "
            f"{type(exc).__name__}: {exc}\n  the spec: {spec!r}\n  Keys are loops, outer to "
            f'inner: an axis ("{problem.dims[0]}"), a tile ("{problem.vector_axis}#16"), a '
            f'split segment ("{problem.vector_axis}[0:32]") holding its own nested spec'
        ) from exc
    check_schedule(scheduler, kata.id, label, problem)
    return impl, scheduler


# --- The kinds of task, one class each, in one registry: what the manifest's `kind` means
#
# A kind knows how the harness gets a kernel out of the learner's function: a schedule on
# a fresh scheduler of the task's problem (and, for a race over "unfused", the same
# schedule without its fusion, from the same call), and which of the learner's commands
# apply to it: `xtc-katas show` (shown), `report` and the tests' race over naive (raced),
# the race against numpy on threads (numpy_race: report, calibration), `explore`
# (explored). Every place that depends on a task's kind asks `kind_of(task)`; none
# compares kind names (tests/test_task_kinds.py). A new kind of kata is one class here,
# registered in KINDS, and its entry in the manifest's list of kinds (kata/manifest.py
# KINDS; the lint checks that both agree).

Built = tuple[Any, Any]  # (XTC backend, checked scheduler)

#: The samples `show --sample N` draws from a strategy: kata 07's search's.
EXPLORED, EXPLORED_SEED = 30, 42


@dataclass(frozen=True)
class TaskKind:
    """A task whose function builds no kernel on its own (kata 01's metric, a graph):
    none of the commands apply. Each kind below overrides what it supports."""

    name: str = ""
    #: `xtc-katas show` can build its schedule.
    shown: ClassVar[bool] = False
    #: `xtc-katas report` races it as its test does (speed_judge.race, over naive).
    raced: ClassVar[bool] = False
    #: Raced against numpy on 1 and more threads (kata 08): report, calibration.
    numpy_race: ClassVar[bool] = False
    #: What `xtc-katas explore` runs: "search" (a generator of measured candidates) or
    #: "optimizer" (raced on the cost model); "" for none.
    explored: ClassVar[str] = ""
    #: For a search, the kind of task that gives it what it searches.
    feeds_on: ClassVar[str] = ""
    #: The learner's call in messages: "f(sch)", "f()".
    call: ClassVar[str] = "()"

    def in_own_terms(self, mistakes: list[str], loop_nest: Any) -> list[str]:
        """The loop-nest checks' messages, told in the terms the learner writes: the
        scheduler's calls, as they are, for a function that schedules."""
        return mistakes

    def schedule(
        self,
        kata: Kata,
        module: ModuleType,
        function: str,
        backend: KataBackend,
        problem: Problem,
        unfused: bool = False,
        threads: int = 1,
    ) -> Built:
        """(XTC backend, checked scheduler) of the learner's function on a fresh
        scheduler of `problem`; `unfused`: with its fusion left out."""
        raise LookupError(
            f"{kata.id}.{function} is of kind {self.name!r}: only a task of kind "
            f"{', '.join(repr(k) for k, c in KINDS.items() if c.builds)} builds a schedule "
            "on its own (katas/manifest.toml)"
        )

    #: Whether schedule() builds one.
    builds: ClassVar[bool] = False

    def schedule_pair(
        self, kata: Kata, module: ModuleType, function: str, backend: KataBackend, problem: Problem
    ) -> tuple[Built, Built]:
        """(fused, unfused) from ONE call of the function: the unfused one is the same
        schedule minus its fusion, whatever the function does (kata 09)."""
        raise LookupError(
            f"{kata.id}.{function} is of kind {self.name!r}: only a task of kind 'schedule' "
            "or 'spec' has an unfused twin (katas/manifest.toml)"
        )

    def shown_schedule(
        self,
        kata: Kata,
        module: ModuleType,
        function: str,
        backend: KataBackend,
        problem: Problem,
        args: argparse.Namespace,
    ) -> Built:
        """The schedule `xtc-katas show` shows, built as the task's tests build it."""
        if not self.shown:
            raise LookupError(f"{kata.id}.{function} builds no schedule to show")
        return self.schedule(kata, module, function, backend, problem)

    def compiled(
        self,
        kata: Kata,
        module: ModuleType,
        task: Task,
        backend: KataBackend,
        problem: Problem,
        workdir: Workdir,
    ) -> tuple[Any, Any]:
        """(the learner's compiled kernel, its unfused twin or None): what a race over
        the task's baseline times. The twin, for a baseline of "unfused", comes from the
        same call of the learner's function (schedule_pair)."""
        function = task.function
        if task.baseline == "unfused":
            (impl, scheduler), (impl_unfused, unfused) = self.schedule_pair(
                kata, module, function, backend, problem
            )
            return (
                workdir.compile(impl, scheduler.schedule(), stem=function),
                workdir.compile(impl_unfused, unfused.schedule(), stem=f"{function}_unfused"),
            )
        impl, scheduler = self.schedule(kata, module, function, backend, problem)
        return workdir.compile(impl, scheduler.schedule(), stem=function), None


def _checked_pair(kata: Kata, label: str, pair: tuple[Built, Built]) -> tuple[Built, Built]:
    (_, fused), (_, unfused) = pair
    if nest_signature(fused) == nest_signature(unfused):
        raise ScheduleMistake(
            f"{kata.id} › {label}: this schedule fuses nothing (no fuse_consumer_at or "
            'fuse_producer_at call, no "fuse_consumer" annotation), so racing it against '
            "itself unfused measures nothing: fuse the relu into C's nest"
        )
    return pair


class ScheduleKind(TaskKind):
    """f(sch): schedules the scheduler it is given (recorded, replayed, checked)."""

    shown = raced = builds = True
    call = "(sch)"

    def schedule(self, kata, module, function, backend, problem, unfused=False, threads=1):
        return apply_schedule(kata, module, function, backend, problem, unfused)

    def schedule_pair(self, kata, module, function, backend, problem):
        pair = apply_schedule_pair(kata, module, function, backend, problem)
        return _checked_pair(kata, f"{function}(sch)", pair)


class SpecKind(TaskKind):
    """f(): returns a descript spec for descript_scheduler."""

    shown = raced = builds = True

    def schedule(self, kata, module, function, backend, problem, unfused=False, threads=1):
        return apply_spec(kata, module, function, backend, problem, unfused)

    def schedule_pair(self, kata, module, function, backend, problem):
        pair = apply_spec_pair(kata, module, function, backend, problem)
        return _checked_pair(kata, f"{function}()", pair)

    def in_own_terms(self, mistakes: list[str], loop_nest: Any) -> list[str]:
        """A spec's writer never sees descript's loop names ('i0' for "i#4") nor calls
        unroll(): each `unroll({'i0': 4})` becomes `"i#4": {"unroll": True}` and each
        loop named is followed by its key (an outside learner's fused_spec was told to
        call unroll({'i0': 4}), issue 20)."""
        keys = {
            name: f"{axis}#{size}"
            for axis, tiles in loop_nest.root_node.tiles.items()
            for name, size in tiles.items()
        }

        def spec_terms(mistake: str) -> str:
            for name, key in keys.items():
                mistake = re.sub(
                    rf"unroll\(\{{'{re.escape(name)}': \d+\}}\)",
                    f'"{key}": {{"unroll": True}}',
                    mistake,
                )
                mistake = mistake.replace(f"'{name}'", f"'{name}' (your \"{key}\")", 1)
            return mistake

        return [spec_terms(mistake) for mistake in mistakes]


class StrategyKind(TaskKind):
    """f(graph): returns an XTC strategy; its first sample of STRATEGY_SEED is the
    schedule (`show --sample N`: the Nth of the samples kata 07's search draws)."""

    shown = builds = True
    call = "(graph)"

    def schedule(self, kata, module, function, backend, problem, unfused=False, threads=1):
        return apply_strategy(kata, module, function, backend, problem)

    def shown_schedule(self, kata, module, function, backend, problem, args):
        if getattr(args, "sample", None) is None:  # the sample the task's test races
            return self.schedule(kata, module, function, backend, problem)
        strategy = getattr(module, function)(problem.graph())
        samples = [list(s) for s in strategy.sample(EXPLORED, EXPLORED_SEED)]
        impl, scheduler = fresh_scheduler(backend, problem)
        strategy.generate(scheduler, samples[args.sample])
        return impl, scheduler


class LargeKind(TaskKind):
    """f(sch, threads): schedules the challenge on `threads` threads, raced with numpy."""

    shown = builds = numpy_race = True
    call = "(sch, threads)"

    def schedule(self, kata, module, function, backend, problem, unfused=False, threads=1):
        return apply_large(kata, module, function, backend, problem, threads)

    def shown_schedule(self, kata, module, function, backend, problem, args):
        return self.schedule(kata, module, function, backend, problem, threads=args.threads)


class BaselineKind(TaskKind):
    """f(graph, Backend, dump_file): compiles the graph unscheduled; show reads the
    scheduler it made."""

    shown = True
    call = "(graph, Backend, dump_file)"

    def shown_schedule(self, kata, module, function, backend, problem, args):
        recorder = SchedulerRecorder(backend.Backend)
        with tempfile.TemporaryDirectory() as scratch:
            getattr(module, function)(problem.graph(), recorder.Backend, f"{scratch}/baseline")
        return recorder.last()


class CandidatesKind(TaskKind):
    """f(): returns {name: spec}, the specs a search tries; show shows one by name
    (`--candidate`, default the first)."""

    shown = True

    def shown_schedule(self, kata, module, function, backend, problem, args):
        specs = dict(getattr(module, function)())
        name = getattr(args, "candidate", None) or next(iter(specs))
        if name not in specs:
            raise LookupError(f"no candidate {name!r}; {function}() has {list(specs)}")
        return schedule_spec(kata, specs[name], name, backend, problem)


class SearchKind(TaskKind):
    """f(graph, Backend, specs, peak): yields (index, total, name, percent), over the
    specs a task of kind "candidates" gives."""

    explored = "search"
    feeds_on = "candidates"

    def run_search(
        self,
        search: Any,
        feed: Any,
        graph: Any,
        backend: KataBackend,
        peak: float,
        num: int,
        seed: int,
    ) -> Any:
        """The learner's search `search` called as its tests call it, on what `feed` (the
        function of the task it feeds on) gives."""
        return search(graph, backend.Backend, feed(), peak)


class StrategySearchKind(SearchKind):
    """f(graph, Backend, strategy, num, seed, peak): yields like a search, over `num`
    samples of seed `seed` of the strategy a task of kind "strategy" gives."""

    feeds_on = "strategy"

    def run_search(self, search, feed, graph, backend, peak, num, seed):
        return search(graph, backend.Backend, feed(graph), num, seed, peak)


class OptimizerKind(TaskKind):
    """f(sample_fn, batch, seed): returns an XTC Optimizer, raced on a cost model."""

    explored = "optimizer"


#: The registry: every kind the manifest may name, by name.
KINDS: dict[str, TaskKind] = {
    "schedule": ScheduleKind("schedule"),
    "spec": SpecKind("spec"),
    "baseline": BaselineKind("baseline"),
    "candidates": CandidatesKind("candidates"),
    "search": SearchKind("search"),
    "strategy": StrategyKind("strategy"),
    "strategy_search": StrategySearchKind("strategy_search"),
    "large": LargeKind("large"),
    "optimizer": OptimizerKind("optimizer"),
}
#: A task without a kind: it builds nothing the commands use.
NO_KIND = TaskKind("")


def kind_of(task: Task | None) -> TaskKind:
    """The kind of `task` (NO_KIND for a task without one, or no task): one of KINDS, or
    a kind its kata declares (declared_kind)."""
    if task is None or not task.kind:
        return NO_KIND
    return declared_kind(task.kind, task.kind_class) if task.kind_class else KINDS[task.kind]


@functools.cache
def declared_kind(name: str, where: str) -> TaskKind:
    """A kind a kata declares in the manifest (its `kinds`), for tasks no kind of KINDS
    fits: the TaskKind subclass at `where` ("katas/NN_name/module.py:Class"), imported
    once from the kata's folder. A new kind of kata then needs no harness change: its
    class says how the learner's function becomes a schedule, and which commands apply.
    """
    file, class_name = where.split(":")
    path = ROOT / file
    module_name = f"xtc_katas_kind_{path.parent.name}_{path.stem}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None or not path.is_file():
        raise LookupError(f"{where}: no such file, for the kind {name!r} (katas/manifest.toml)")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module  # dataclasses and pickling look their module up
    spec.loader.exec_module(module)
    found = getattr(module, class_name, None)
    if not (isinstance(found, type) and issubclass(found, TaskKind)):
        raise LookupError(
            f"{where}: no TaskKind subclass {class_name!r} for the kind {name!r} "
            "(katas/manifest.toml; xtc_katas/checks/learner_schedules.py has TaskKind)"
        )
    return found(name)


def kind_source(task: Task | None) -> str:
    """A hash of the module of a kind its kata declares ("" for the harness's kinds, whose
    code module_cache hashes with xtc_katas): what a cached reference module's key needs
    besides, since that module's code builds the reference's schedule."""
    if task is None or not task.kind_class:
        return ""
    return hashlib.sha256((ROOT / task.kind_class.split(":")[0]).read_bytes()).hexdigest()


def feeder_of(kata: Kata, task: Task) -> Task:
    """The task of `kata` whose function a search task feeds on (its kind's feeds_on)."""
    wanted = KINDS[kind_of(task).feeds_on]
    return next(t for t in kata.tasks if kind_of(t) is wanted)


def tasks_where(kata: Kata, wanted: str) -> list[Task]:
    """The kata's tasks whose kind has the flag `wanted` ("shown", "raced", ...)."""
    return [task for task in kata.tasks if getattr(kind_of(task), wanted)]


def apply_task(
    kata: Kata,
    module: ModuleType,
    function: str,
    backend: KataBackend,
    problem: Problem,
    unfused: bool = False,
) -> Built:
    """The task's function applied on a fresh scheduler of `problem` and checked, as its
    kind builds it; `unfused`: the same schedule with its fusion left out (to judge a
    kernel against its unfused self, build both from one call: apply_task_pair)."""
    return kind_of(kata.task(function)).schedule(kata, module, function, backend, problem, unfused)


def apply_task_pair(
    kata: Kata, module: ModuleType, function: str, backend: KataBackend, problem: Problem
) -> tuple[Built, Built]:
    """((impl, scheduler) fused, (impl, scheduler) unfused), both from ONE call of the
    function: the baseline is the learner's own schedule minus its fusion (kata 09)."""
    return kind_of(kata.task(function)).schedule_pair(kata, module, function, backend, problem)
