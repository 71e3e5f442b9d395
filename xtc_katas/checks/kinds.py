"""The kinds of task, in one registry, KINDS: what the manifest's `kind` means.

A kind says how the harness gets a schedule out of the learner's function: its `probe`
calls the function in the learner's worker (checks/learner.py) and returns the schedule
as plain data, the primitive calls made on a recording scheduler or a descript spec,
which the task under test builds again on a fresh scheduler. Its flags say which
commands serve it. What depends on a kind asks `kind_of(task)` (a search's probe, which
kind feeds it). A new kind is one entry in KINDS, plus a builder in
TaskUnderTest.schedules if its probe returns neither calls nor a spec.
"""

from __future__ import annotations

import copy
import re
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from xtc_katas.checks.schedule import Call, ScheduleMistake, fresh_scheduler, recording
from xtc_katas.kata.manifest import Kata, Task
from xtc_katas.kata.problems import Problem
from xtc_katas.measure.backends import KataBackend
from xtc_katas.measure.isolation import SEARCH_TIME_LIMIT_S
from xtc_katas.measure.observed import Proxy

#: The sample a task of kind "strategy" is raced with: the first one of this seed.
STRATEGY_SEED = 0
#: The samples `show --sample N` draws from a strategy: kata 07's search's.
EXPLORED, EXPLORED_SEED = 30, 42


@dataclass(frozen=True)
class Asked:
    """What a probe builds, in the learner's worker: `function`'s schedule of `problem` on
    `backend` (`label` names it in messages; `threads` for a kind scheduled per thread
    count; `option` what `show` asks: a sample, a candidate, a thread count)."""

    function: str
    label: str
    backend: KataBackend
    problem: Problem
    threads: int | None = None
    option: Any = None


def _calls(asked: Asked, function: Callable[..., Any], *args: Any) -> list[Call]:
    """`function(sch, *args)` on a recording scheduler of the problem: the calls it made."""
    label = asked.label
    _, scheduler = fresh_scheduler(asked.backend, asked.problem)
    sch, calls = recording(scheduler, label)
    returned = function(sch, *args)
    if returned is not None:
        raise ScheduleMistake(
            f"{label}(sch{', threads' if args else ''}) returned a {type(returned).__name__}: "
            "it must call primitives on `sch` (sch.interchange(...), sch.vectorize(...)) and "
            "return None. The harness compiles `sch` itself, so a returned value is ignored"
        )
    return calls


def schedule_probe(module: ModuleType, asked: Asked) -> list[Call]:
    """f(sch): the calls it made."""
    return _calls(asked, getattr(module, asked.function))


def large_probe(module: ModuleType, asked: Asked) -> list[Call]:
    """f(sch, threads): the calls it made for `threads` (`show --threads`: `option`)."""
    threads = asked.option or asked.threads or 1
    return _calls(asked, getattr(module, asked.function), threads)


def strategy_probe(module: ModuleType, asked: Asked) -> list[Call]:
    """f(graph) returns an XTC strategy: the calls it generates for its first sample of
    STRATEGY_SEED (`show --sample N`: the Nth of the samples kata 07's search draws)."""
    label, option = asked.label, asked.option
    strategy = getattr(module, asked.function)(asked.problem.graph())
    if isinstance(strategy, type):
        raise ScheduleMistake(
            f"{label}(graph) returned the class {strategy.__name__} itself, not a strategy: "
            "build one on the graph you are given, as kata 07's 'The idea' does"
        )
    if not (hasattr(strategy, "sample") and hasattr(strategy, "generate")):
        raise ScheduleMistake(
            f"{label}(graph) returned a {type(strategy).__name__}, not a strategy: return "
            "an instance of a class from xtc.search.strategies"
        )
    if option is None:
        sample = next(iter(strategy.sample(1, STRATEGY_SEED)))
    else:
        sample = list(strategy.sample(EXPLORED, EXPLORED_SEED))[option]
    return recorded_calls(asked, strategy, sample)


def recorded_calls(asked: Asked, strategy: Any, sample: Any) -> list[Call]:
    """The calls `strategy.generate` makes for `sample` on a fresh scheduler."""
    return _calls(asked, lambda sch: strategy.generate(sch, list(sample)))


def plain(value: Any) -> Any:
    """A deep copy of a spec made of plain dicts, lists and tuples (a dict subclass's own
    items() is never asked): what the harness builds is what it read, once."""
    if isinstance(value, dict):
        return {plain(key): plain(item) for key, item in dict.items(value)}
    if isinstance(value, (list, tuple)):
        base = list if isinstance(value, list) else tuple
        return base(plain(item) for item in base.__iter__(value))
    return copy.deepcopy(value)


def spec_probe(module: ModuleType, asked: Asked) -> dict:
    """f() returns a descript spec: that dict, plain."""
    spec = getattr(module, asked.function)()
    if not isinstance(spec, dict):
        example = {dim: {} for dim in asked.problem.dims}
        raise ScheduleMistake(
            f"{asked.label}() returned a {type(spec).__name__}, not a dict: return the spec "
            f"itself, a dict of loops, outer to inner, e.g. {example!r}"
        )
    return plain(spec)


def candidate_probe(module: ModuleType, asked: Asked) -> dict:
    """f() returns [(name, spec)]: the spec named `option` (default: the first)."""
    specs = dict(getattr(module, asked.function)())
    name = asked.option or next(iter(specs))
    if name not in specs:
        raise LookupError(f"no candidate {name!r}; {asked.function}() has {list(specs)}")
    return plain(specs[name])


def baseline_probe(module: ModuleType, asked: Asked) -> list[Call]:
    """f(graph, Backend, dump_file) compiles the graph itself: the calls made on the last
    scheduler it got (a baseline makes none)."""
    made: list[list[Call]] = []

    def get_scheduler(get: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        sch, calls = recording(get(*args, **kwargs), asked.label)
        made.append(calls)
        return sch

    def backend_of(make: Callable[..., Any], *args: Any, **kwargs: Any) -> Proxy:
        return Proxy(make(*args, **kwargs), get_scheduler=get_scheduler)

    with tempfile.TemporaryDirectory() as scratch:
        Backend = Proxy(asked.backend.Backend, __call__=backend_of)
        getattr(module, asked.function)(asked.problem.graph(), Backend, f"{scratch}/baseline")
    if not made:
        raise LookupError("no scheduler was made from the Backend it was given")
    return made[-1]


def search_probe(
    module: ModuleType,
    search: str,
    feed: str,
    feeds_on: str,
    backend: KataBackend,
    problem: Problem,
    peak: float,
    num: int,
    seed: int,
) -> Any:
    """A search (katas 06, 07) called as its tests call it, on what the function `feed`
    of the task it feeds on gives: candidates, or a strategy's `num` samples of `seed`."""
    graph, explore = problem.graph(), getattr(module, search)
    if feeds_on == "strategy":
        return explore(graph, backend.Backend, getattr(module, feed)(graph), num, seed, peak)
    return explore(graph, backend.Backend, getattr(module, feed)(), peak)


@dataclass(frozen=True)
class Kind:
    """What a task's function gives the harness, and which commands serve it."""

    name: str
    #: In the learner's worker: the function's schedule as plain data (None: it has none,
    #: and `xtc-katas show` has nothing to show).
    probe: Callable[..., Any] | None = None
    #: `xtc-katas report` races it over its baseline (naive, or unfused).
    raced: bool = False
    #: Raced against numpy on 1 and more threads (kata 08): report, calibration.
    numpy_race: bool = False
    #: What `xtc-katas explore` runs: "search" (a generator of measured candidates) or
    #: "optimizer" (raced on the cost model); "" for none.
    explored: str = ""
    #: For a search, the kind of task that gives it what it searches.
    feeds_on: str = ""
    #: The learner's call in messages: "(sch)", "()".
    call: str = "()"
    #: What `xtc-katas show` may ask of its probe (an option of its own: "sample",
    #: "candidate", "threads"), passed as the probe's `option`.
    option: str = ""
    #: Seconds one call of the function may run in the learner's worker (None: the
    #: learner's call limit, 30 s). Kata 08's hints ask it to time its candidates on this
    #: machine, as its reference does: 20-30 s in a fresh root, past 30 s under load.
    time_limit_s: float | None = None

    def in_own_terms(self, mistakes: list[str], loop_nest: Any) -> list[str]:
        """The loop-nest checks' messages in the terms the learner writes: a spec's writer
        never sees descript's loop names ('i0' for "i#4") nor calls unroll(): each loop
        named is followed by its key, and an unroll is said as the spec's annotation,
        `"i#4": {"unroll": True}`."""
        if self.probe not in (spec_probe, candidate_probe):
            return mistakes
        keys = {
            name: f"{axis}#{size}"
            for axis, tiles in loop_nest.root_node.tiles.items()
            for name, size in tiles.items()
        }

        def spec_terms(mistake: str) -> str:
            for name, key in keys.items():
                if f"'{name}'" in mistake:  # unrolling, in a spec, is an annotation
                    mistake = re.sub(
                        r"unroll it by its (full )?size",
                        f'unroll it, "{key}": {{"unroll": True}}',
                        mistake,
                    )
                mistake = mistake.replace(f"'{name}'", f"'{name}' (your \"{key}\")", 1)
            return mistake

        return [spec_terms(mistake) for mistake in mistakes]


KINDS: dict[str, Kind] = {
    kind.name: kind
    for kind in (
        Kind("schedule", schedule_probe, raced=True, call="(sch)"),
        Kind("spec", spec_probe, raced=True),
        Kind(
            "large",
            large_probe,
            numpy_race=True,
            call="(sch, threads)",
            option="threads",
            time_limit_s=SEARCH_TIME_LIMIT_S,
        ),
        Kind("strategy", strategy_probe, call="(graph)", option="sample"),
        Kind("baseline", baseline_probe, call="(graph, Backend, dump_file)"),
        Kind("candidates", candidate_probe, option="candidate"),
        Kind("search", explored="search", feeds_on="candidates"),
        Kind("strategy_search", explored="search", feeds_on="strategy"),
        Kind("optimizer", explored="optimizer"),
    )
}
#: A task without a kind (a graph, a formula): it builds nothing the commands use.
NO_KIND = Kind("")


def kind_of(task: Task) -> Kind:
    """The kind of `task`, NO_KIND for a task without one (the manifest's lint names a
    kind that is not in KINDS)."""
    return KINDS[task.kind] if task.kind else NO_KIND


def feeder_of(kata: Kata, task: Task) -> Task:
    """The task of `kata` whose function a search task feeds on (its kind's feeds_on)."""
    wanted = KINDS[kind_of(task).feeds_on]
    return next(t for t in kata.tasks if kind_of(t) is wanted)


def tasks_where(kata: Kata, wanted: str) -> list[Task]:
    """The kata's tasks whose kind has the flag `wanted` ("probe", "raced", ...)."""
    return [task for task in kata.tasks if getattr(kind_of(task), wanted)]
