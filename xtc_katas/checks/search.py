"""Checks of a learner's search generator (katas 06 and 07).

A search is a generator of `(index, total, candidate, percent_of_peak)`. The checks here
hold it to its contract (order, totals, candidates as given, floats), to laziness (one
compile per item taken), to robustness (a broken candidate scores 0.0 and the search goes
on) and to honesty (what it reports comes from the times its evaluators returned, or
agrees with the harness's own timing of the candidate).

The search runs in the learner's process, where its code can rebind anything, the
harness's probes included: so its compiles and evaluations are made by the harness, as
they are asked (checks/compiles.py), and the record of its run (SearchRun) is kept here,
from what the harness compiled and timed and the items it was told (`run_search`).
An item's figure is judged by the modules compiled from that item's own schedule, which
the harness builds itself (`spec_schedule`, `sample_schedule`): a search that timed XTC's
default schedule for every candidate passed when the modules compiled since the previous
item counted as the item's (the outside red team, round 3: issue 55).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from types import ModuleType
from typing import Any

from xtc_katas.checks.compiles import Compiles, RecordingBackend, ask, served
from xtc_katas.checks.schedule import Call, fresh_scheduler, recording
from xtc_katas.kata.failures import KataFailure, raise_mistakes
from xtc_katas.kata.problems import Problem
from xtc_katas.measure import wire
from xtc_katas.measure.isolation import SEARCH_TIME_LIMIT_S, run_isolated
from xtc_katas.measure.observed import Observation, Proxy, timed_module, within_own_times
from xtc_katas.measure.timing import (
    FEW_LONG_ROUNDS,
    fastest_call,
    format_percent,
    percent_of_peak,
    time_side_by_side,
)


class SearchMistake(KataFailure):
    """The generator breaks its contract."""


class CompileCounter:
    """Counts the compiles a search run in this process makes through the Backend class
    it is handed (a harness test's search of fakes), and keeps what each compiled
    module's evaluators returned and whether it ran at all (measure/observed.py). A
    learner's search is counted by the harness instead (run_search)."""

    def __init__(self, backend_class: Any) -> None:
        self.compiles = 0
        #: per compile, in order: the times its module's evaluators returned, its runs
        self.observations: list[Observation] = []
        #: every dump_file a compiler was asked for, in order
        self.dump_files: list[str] = []

        def compile(compile: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
            self.compiles += 1
            self.observations.append(Observation())
            return timed_module(compile(*args, **kwargs), self.observations[-1])

        def compiler(get: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
            if kwargs.get("dump_file") is not None:
                self.dump_files.append(str(kwargs["dump_file"]))
            return Proxy(get(*args, **kwargs), compile=compile)

        def backend(make: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
            return Proxy(make(*args, **kwargs), get_compiler=compiler)

        self.Backend = Proxy(backend_class, __call__=backend)


@wire.record
@dataclass
class SearchRun:
    """What a generator yielded, and how many compiles it had made after the first item."""

    items: list[tuple[Any, ...]] = field(default_factory=list)
    #: for each item, the times the evaluators of the modules compiled for it returned
    #: before it was yielded (a module of an earlier item, evaluated again, is not its)
    times: list[list[float]] = field(default_factory=list)
    #: for each item, whether a module compiled for it was run (an evaluator or an
    #: executor asked for) before it was yielded
    ran: list[bool] = field(default_factory=list)
    compiles_before_first: int = 0
    compiles_after_first: int = 0
    compiles: int = 0
    #: the dump_file of every compiler the search asked for, in order
    dump_files: list[str] = field(default_factory=list)

    def reported(self, names: list[str]) -> dict[str, Any]:
        """What the search reported, by candidate name (the n-th name for the n-th item)."""
        return {name: item[3] for name, item in zip(names, self.items, strict=False)}


#: A search yields one item per candidate (32 at most, kata 06; 30 samples, kata 07):
#: past this many, or an item this large, it is not kept (the harness's memory).
MAX_ITEMS = 1024
MAX_ITEM_BYTES = 64 << 10


def spec_schedule(spec: Any, backend: Any, problem: Problem) -> list[Call] | None:
    """The calls descript_scheduler makes for `spec` on a fresh scheduler of the
    problem: a kata 06 item's own schedule (None: descript rejects the spec)."""
    from xtc.schedules.descript import descript_scheduler

    sch, calls = recording(fresh_scheduler(backend, problem)[1], "a spec")
    try:
        descript_scheduler(
            scheduler=sch, node_name=problem.scheduled_node, abstract_dims=problem.dims, spec=spec
        )
    except Exception:
        return None
    return calls


def sample_schedule(
    strategy: Any, sample: Any, backend: Any, problem: Problem
) -> list[Call] | None:
    """The calls `strategy.generate` makes for `sample` on a fresh scheduler of the
    problem: a kata 07 item's own schedule (None: the strategy cannot apply it)."""
    sch, calls = recording(fresh_scheduler(backend, problem)[1], "a sample")
    try:
        strategy.generate(sch, list(sample))
    except Exception:
        return None
    return calls


class SearchLog:
    """The record of a search's run, kept where its compiles are counted (`counter`: a
    harness's checks/compiles.Compiles, or a CompileCounter of this process): told when
    the generator starts and each item it yields, in order (`drain`).

    With `schedules` (the n-th item's own schedule, as primitive calls, for a counter
    that keeps the compiles asked of it: Compiles), an item's modules are those compiled
    from its schedule, whenever the search compiled them; without (a CompileCounter's
    fakes), those compiled since the previous item."""

    def __init__(
        self, counter: Any, where: str = "the search", schedules: list[Any] | None = None
    ) -> None:
        self.counter, self.where, self.schedules = counter, where, schedules
        self.run = SearchRun()
        self._seen = 0

    def _own(self) -> list[Observation]:
        """The observations of the modules compiled for the next item."""
        if self.schedules is None:
            return self.counter.observations[self._seen :]
        n = len(self.run.items)
        schedule = self.schedules[n] if n < len(self.schedules) else None
        if schedule is None:
            return []
        pairs = zip(self.counter.made, self.counter.observations, strict=True)
        return [seen for made, seen in pairs if made is not None and made.calls == schedule]

    def started(self) -> None:
        self.run.compiles_before_first = self._seen = self.counter.compiles

    def item(self, item: Any) -> None:
        if len(self.run.items) >= MAX_ITEMS:
            raise SearchMistake(f"{self.where} yielded more than {MAX_ITEMS} items")
        if len(wire.encode(wire.to_wire(item))) > MAX_ITEM_BYTES:
            item = f"an item of more than {MAX_ITEM_BYTES} bytes"
        own = self._own()
        self.run.items.append(item)
        self.run.times.append([t for observation in own for t in observation.times])
        self.run.ran.append(any(observation.runs for observation in own))
        self._seen = self.counter.compiles
        if len(self.run.items) == 1:
            self.run.compiles_after_first = self.counter.compiles

    def __call__(self, question: tuple) -> None:
        """A question of `drain`: ("started",) or ("item", item)."""
        if question[0] == "item":
            self.item(question[1])
        else:
            self.started()

    def finish(self) -> SearchRun:
        self.run.compiles = self.counter.compiles
        self.run.dump_files = list(self.counter.dump_files)
        return self.run


def drain(generator: Any, where: str, tell: Callable[[tuple], Any]) -> None:
    """Drain the generator, telling `tell` ("started",), then ("item", item) for each
    item as it is yielded (a SearchLog, or the harness that keeps one)."""
    if not isinstance(generator, Iterator):
        raise SearchMistake(
            f"{where} returned a {type(generator).__name__}, not a generator: use `yield` "
            "inside the loop, so each candidate is measured only when it is asked for"
        )
    tell(("started",))
    count = 0
    try:
        for item in generator:
            count += 1
            tell(("item", item))
    except Exception as exc:
        raise SearchMistake(
            f"{where} raised {type(exc).__name__}: {exc} after {count} items. A "
            "search must survive a bad candidate: wrap one candidate's work in try/except "
            "Exception, yield 0.0 for it, and go on"
        ) from exc


def take_all(generator: Any, counter: CompileCounter, where: str) -> SearchRun:
    """Drain a generator run in this process, its compiles counted by `counter`."""
    log = SearchLog(counter)
    drain(generator, where, log)
    return log.finish()


def searched_by_harness(
    module: ModuleType, feed: Callable[..., Any], where: str, backend: Any, problem: Problem,
    *args: Any,
) -> Any:  # fmt: skip
    """In the learner's process: the search `feed(module, graph, Backend, *args)` returns,
    with what else it keeps (generator, kept), drained, each of its compiles and
    evaluations asked of the harness (checks/compiles.py), each item told it as it is
    yielded. Returns `kept`: the harness keeps the record of the run."""
    handed = RecordingBackend(backend.Backend, where)
    generator, kept = feed(module, problem.graph(), handed.Backend, *args)
    drain(generator, where, ask)
    return kept


def run_search(
    learner: Any, workdir: Any, where: str, feed: Callable[..., Any], backend: Any,
    problem: Problem, *args: Any, schedules: list[list[Call] | None],
) -> tuple[Any, SearchRun]:  # fmt: skip
    """The learner's search of `problem` on `backend` (`feed`, run in its process: see
    searched_by_harness), compiled, evaluated and counted here (checks/compiles.py):
    what `feed` kept, and the SearchRun of what this process did for the search, each
    item judged by the modules compiled from its own schedule, `schedules[n]` (None: it
    has none, a broken candidate)."""
    compiles = Compiles(backend, problem, workdir, where)
    log = SearchLog(compiles, where, schedules)
    compiles.others.update(started=log.started, item=log.item)
    kept = served(
        learner, compiles, searched_by_harness, feed, where, backend, problem, *args,
        time_limit_s=SEARCH_TIME_LIMIT_S,
    )  # fmt: skip
    return kept, log.finish()


#: A search ranks its candidates by its own timer, which under load can put a slow one
#: first: the harness re-times this many of the best it reported, side by side, and races
#: the fastest (docs/timing.md#searches-the-learners-own-times).
FINALISTS = 5


def finalists(run: SearchRun) -> list[int]:
    """The indices of the FINALISTS best-scored items, best first (those scored 0.0, failed
    candidates, only when nothing scored more)."""
    ranked = sorted(range(len(run.items)), key=lambda n: run.items[n][3], reverse=True)
    scored = [n for n in ranked[:FINALISTS] if run.items[n][3] > 0]
    return scored or ranked[:1]


def fastest(modules: dict[Any, Any], problem: Problem) -> Any:
    """The key of the fastest module, timed side by side on this machine: each one's
    median over 3 rounds of its best time in a round."""
    if len(modules) == 1:
        return next(iter(modules))
    named = {f"finalist {n}": module for n, module in enumerate(modules.values())}
    timings = time_side_by_side(named, problem, rounds=3, **FEW_LONG_ROUNDS)
    keys = dict(zip(named, modules, strict=True))
    return keys[min(named, key=timings.typical)]


def contract_mistakes(run: SearchRun, candidates: list[Any], label: str) -> list[str]:
    """Order, totals, candidates as given, a float for each: what a progress bar relies on."""
    mistakes = []
    total = len(candidates)
    if len(run.items) != total:
        mistakes.append(f"it yielded {len(run.items)} items for {total} {label}s: one per {label}")
    for n, item in enumerate(run.items):
        if not isinstance(item, tuple) or len(item) != 4:
            mistakes.append(
                f"item {n} is {item!r}: yield a 4-tuple (index, total, {label}, percent)"
            )
            continue
        index, item_total, candidate, percent = item
        if index != n:
            mistakes.append(f"item {n} has index {index!r}: count 0, 1, 2, ... in order")
        if item_total != total:
            mistakes.append(f"item {n} has total {item_total!r}: every item carries {total}")
        if n < total and _plain(candidate) != _plain(candidates[n]):
            mistakes.append(
                f"item {n} names {candidate!r}, expected {candidates[n]!r}: yield the {label} "
                "as given, in the order given"
            )
        if not isinstance(percent, float) or math.isnan(percent) or percent < 0:
            mistakes.append(
                f"item {n} has percent {percent!r}: a float >= 0 (0.0 for a broken {label})"
            )
    return mistakes


def laziness_mistakes(run: SearchRun, valid: int = 1) -> list[str]:
    """One compile per item, made when the item is asked for, through the given Backend
    (`valid` of them at least: a search that imports its own backend measures another)."""
    mistakes = []
    if run.compiles < valid:
        mistakes.append(
            f"it compiled {run.compiles} candidates through the `Backend` it was given, for "
            f"{valid} valid ones: build each with `Backend(graph)` from that argument, not a "
            "backend you import (the search must measure the backend under test)"
        )
    if run.compiles_before_first:
        mistakes.append(
            f"it compiled {run.compiles_before_first} candidates before the first item was "
            "asked for: compile inside the loop, after the generator starts"
        )
    if run.compiles_after_first > 1:
        mistakes.append(
            f"it had compiled {run.compiles_after_first} candidates when it yielded the "
            "first: compile, measure and yield one candidate at a time"
        )
    reused = sorted({path for path in run.dump_files if run.dump_files.count(path) > 1})
    if reused:
        mistakes.append(
            f"it gave the same dump_file to several compiles ({', '.join(reused)}): in one "
            "process that makes an earlier module run a later kernel, and two searches "
            "sharing it crash or leave the output untouched (docs/xtc-0.3.2-field-"
            "notes.md). Give each compile a name of its own (the lesson's 'XTC's "
            "primitives' says where such files can live)"
        )
    return mistakes


def _plain(value: Any) -> Any:
    """Samples may be lists, tuples or numpy arrays: compare their numbers."""
    if isinstance(value, str):
        return value
    try:
        return [int(v) for v in value]
    except TypeError:
        return value


def require(mistakes: list[str], where: str) -> None:
    raise_mistakes(SearchMistake, f"{where}: the search breaks its contract", mistakes)


#: How far a reported % of peak may sit from the harness's side-by-side measurement:
#: noise only slows a run down, so a correct search can read low, never much faster.
HONEST_ABOVE = 1.5
HONEST_BELOW = 3.0
#: Extra readings, each on a fresh compile, before a figure is called too fast.
CONFIRMATIONS = 3


def honesty_mistakes(
    run: SearchRun,
    names: list[str],
    problem: Problem,
    peak_fmas_per_s: float,
    recompile: Callable[[str], Any],
    label: str = "candidate",
) -> list[str]:
    """Each % of peak the search reported (the n-th item's for the n-th of `names`), held
    to what the harness knows of that candidate's speed; a figure not above 0 (a failed
    candidate's) is the contract and robustness tests' to judge.

    A figure for which the search ran no module compiled from that candidate's own
    schedule (`label`: a spec, a sample) is made up. One that XTC's evaluator timed
    must lie between the figures of its own slowest and fastest times, whatever the load
    did to them (observed_mistake). Of those it timed some other way, the best FINALISTS
    are timed again on fresh compiles, `recompile(name)` (retimed_mistakes).
    """
    unrun: list[str] = []
    observed: list[str | None] = []
    retimed = {}
    for n, (name, item) in enumerate(zip(names, run.items, strict=False)):
        figure = item[3]
        # NaN is judged, and fails; a str or None is the contract check's to name
        if not isinstance(figure, (int, float)) or figure <= 0:
            continue
        if not run.ran[n]:
            unrun.append(
                f"for {name!r} it reported {reported_percent(figure)} of peak without running "
                f"a module compiled from that {label}'s schedule (no get_evaluator() on such "
                "a module before the item was yielded; timing another candidate's module, "
                f"or XTC's default schedule, does not count): compile each {label}'s own "
                "schedule, time it and report it"
            )
        elif run.times[n]:
            observed.append(observed_mistake(figure, run.times[n], problem, peak_fmas_per_s, name))
        elif n in finalists(run):
            retimed[name] = recompile(name)
    mistakes = unrun + [mistake for mistake in observed if mistake]
    if retimed:
        reported = run.reported(names)
        mistakes += retimed_mistakes(reported, retimed, problem, peak_fmas_per_s, recompile)
    return mistakes


#: The question for a figure faster than its kernel ran: it names the mistake and the
#: lesson's section, never the formula (the lesson's hint asks for it).
TOO_FAST = (
    "That is faster than the kernel ran: which count of work and which peak did your "
    "figure divide? (kata 01's 'The score: % of peak', kata 06's 'Robust and honest')"
)

#: The question for a figure below every time its own evaluator returned.
BELOW_ITS_TIMES = (
    "Which of those times estimates the kernel, and which count of work and which peak did "
    "your figure divide? (kata 01's 'The score: % of peak', kata 06's 'Robust and honest')"
)

#: The question for a figure slower than the harness measured: which time it keeps.
TOO_SLOW = (
    "Measure with several short runs: how many runs does your evaluator make, and which "
    "of its times estimates the kernel? (kata 06's 'Robust and honest')"
)


def reported_percent(reported: float) -> str:
    """The learner's figure in a message: above 100%, the advice explains it."""
    return format_percent(reported, 2, why="more than the core's peak: see below")


def observed_mistake(
    reported: float, times: list[float], problem: Problem, peak_fmas_per_s: float, name: str
) -> str | None:
    """The figure must come from the times the search's own evaluators returned: no faster
    than its fastest, no slower than its slowest (a mean or a median lies between)."""

    to_percent = partial(percent_of_peak, problem.fmas, peak_fmas_per_s=peak_fmas_per_s)
    if within_own_times(reported, times, to_percent):
        return None
    fastest, slowest = to_percent(min(times)), to_percent(max(times))
    ratio = reported / fastest
    advice = TOO_FAST if reported > fastest else BELOW_ITS_TIMES
    yours = reported_percent(reported)
    return (
        f"for {name!r} it reported {yours} of peak; the {len(times)} times its own XTC "
        f"evaluator returned give {format_percent(slowest, 2)} (slowest, "
        f"{max(times) * 1e6:.0f} us) to {format_percent(fastest, 2)} (fastest, "
        f"{min(times) * 1e6:.0f} us): {ratio:.2f}x the fastest. {advice}"
    )


def retimed_mistakes(
    reported: dict[str, float],
    modules: dict[str, Any],
    problem: Problem,
    peak_fmas_per_s: float,
    recompile: Callable[[str], Any],
) -> list[str]:
    """Time `modules` (candidate name -> compiled module) side by side and compare each
    one's % of peak with what the learner's search `reported` for that name.

    A figure that reads too fast is confirmed before it fails: up to CONFIRMATIONS times,
    on a new compile (`recompile(name)`), timed side by side and as the hint times it,
    keeping the best reading (a kernel can run at two speeds for seconds at a time:
    docs/two-speeds-of-one-kernel.md). One that reads too slow is read again as the hint
    times it (`hinted_seconds`), whose long runs lose more of a busy core.
    """

    measured = partial(percent_of_peak, problem.fmas, peak_fmas_per_s=peak_fmas_per_s)

    def too_fast(name: str) -> bool:
        return reported.get(name, 0.0) > HONEST_ABOVE * measured(best[name])

    timings = time_side_by_side(modules, problem, rounds=3, **FEW_LONG_ROUNDS)
    best = dict(timings.best)
    for _ in range(CONFIRMATIONS):
        twins = {name: recompile(name) for name in best if too_fast(name)}
        if not twins:
            break
        timings = time_side_by_side(twins, problem, rounds=3, **FEW_LONG_ROUNDS)
        for name, twin in twins.items():
            hinted = run_isolated(hinted_seconds, twin)
            best[name] = min(best[name], timings.best[name], hinted)
    mistakes = []
    for name, seconds in best.items():
        figure = reported.get(name, 0.0)
        mistake = honesty_mistake(figure, measured(seconds), name)
        if mistake and not too_fast(name):  # too slow: read again as the hint reads it
            hinted = measured(run_isolated(hinted_seconds, modules[name]))
            read = format_percent(hinted, 2)
            note = f" (XTC's evaluator called that way read {read} right after)"
            mistake = None if figure * HONEST_BELOW >= hinted else mistake + note
        if mistake:
            mistakes.append(mistake)
    return mistakes


def hinted_seconds(module: Any) -> float:
    """The fastest call of XTC's evaluator called as katas 06's and 07's hints say."""
    return fastest_call(module, "a searched candidate", repeat=5, min_repeat_ms=20)


def honesty_mistake(reported: float, measured: float, candidate: Any) -> str | None:
    """The learner's % of peak must agree with the harness's within the machine's noise."""
    if measured <= 0:
        return None
    ratio = reported / measured
    if 1 / HONEST_BELOW <= ratio <= HONEST_ABOVE:
        return None
    advice = TOO_FAST if ratio > HONEST_ABOVE else TOO_SLOW
    yours = reported_percent(reported)
    return (
        f"for {candidate!r} it reported {yours} of peak; the harness measured "
        f"{format_percent(measured, 2)} for the same schedule ({ratio:.2f}x). {advice}"
    )
