"""A learner's compiles as data, compiled again, evaluated and counted by the harness.

Katas 03, 06 and 07 hand the learner's function XTC's Backend class to compile with.
What the learner's process says came of it (a module's outputs, the times its evaluators
returned, how many compiles it made, whether a module ran) is a claim: its code can
rebind any function there, the harness's probes included (the outside red team made a
search that compiled nothing pass by forging the record of its run, and a baseline that
compiled nothing pass by a 'module' computing with numpy: issue 55). So the Backend it
is handed records each compile as data, a `Compile`: the primitive calls made on the
scheduler whose schedule was compiled, and the compiler's options. The harness builds
that again on a fresh scheduler of its own graph and compiles it itself (`build`).

What XTC prints while compiling (kata 03's `generated_code` asks it for a stage with a
`print_...` flag) is printed by the harness's compile, kept here (`Compiles.printed`), and
written in the learner's process to the stream XTC would have written it to: text the
learner's code returns is judged against what the harness's XTC printed, never alone.

A search (katas 06, 07) and kata 03's `percent_of_peak_of` get modules that live in the
harness: the learner's process holds a handle (`HarnessModule`), each compile and each
evaluation is asked of the harness as it happens (`ask`), and the harness's `Compiles`
answers, keeping the counts, the times and the runs itself. Nothing the learner's
process says about them is read.
"""

from __future__ import annotations

import contextlib
import copy
import io
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from xtc_katas.checks.schedule import LOOP_TEXT, Call, recording
from xtc_katas.kata.failures import KataFailure
from xtc_katas.measure import isolation, wire, workdir
from xtc_katas.measure.observed import Observation, Proxy

#: The evaluator's options a learner's code may ask the harness for, and their bounds:
#: what XTC's evaluator takes to time a kernel (the lessons' hints use the first two).
EVALUATOR_OPTIONS = {"repeat": (1, 20), "min_repeat_ms": (0, 500), "number": (1, 1000)}
#: The compiler's options that print a stage (kata 03's lesson): the harness compiles with
#: those the learner's code set, and hands back what XTC printed.
PRINTS = ("print_source_ir", "print_transformed_ir", "print_assembly")


@wire.record
@dataclass(frozen=True)
class Compile:
    """One compile a learner's code asked of the Backend it was handed, as data."""

    #: the primitive calls made on the scheduler whose schedule was compiled
    calls: list
    #: get_scheduler's `default_node`, if it named one
    default_node: str | None
    #: the dump_file and shared_lib it gave get_compiler (the harness compiles into its
    #: own folder, never that path)
    dump_file: str | None
    shared_lib: bool
    #: the print options (PRINTS) it set
    prints: tuple = ()

    def __post_init__(self) -> None:
        if type(self.calls) is not list or not all(type(c) is Call for c in self.calls):
            raise ValueError("a compile's calls are not recorded primitive calls")
        if self.default_node is not None and not (
            type(self.default_node) is str and LOOP_TEXT.fullmatch(self.default_node)
        ):
            raise ValueError("get_scheduler's default_node is not a node's name")
        if self.dump_file is not None and not (
            type(self.dump_file) is str and len(self.dump_file) <= 4096
        ):
            raise ValueError("the dump_file is not a path")
        if type(self.shared_lib) is not bool:
            raise ValueError("shared_lib is not a bool")
        if type(self.prints) is not tuple or not set(self.prints) <= set(PRINTS):
            raise ValueError("a compile's print options are not XTC's print_... flags")


@dataclass(frozen=True)
class Printed:
    """What XTC printed during one compile, by where it printed it: the stdout of the
    moment get_compiler() was called (TVM's IRs: it keeps that stream), the stdout and
    the stderr of the moment compile() ran (TVM's assembly; MLIR's every stage)."""

    at_get_compiler: str = ""
    stdout: str = ""
    stderr: str = ""

    @property
    def text(self) -> str:
        return self.at_get_compiler + self.stdout + self.stderr


# --- in the learner's process ------------------------------------------------------------


class RecordingBackend:
    """XTC's Backend class as the learner's function gets it: each compile of a schedule
    made by one of its schedulers is recorded as a `Compile` and asked of the harness
    (`compiled_by_harness`), which keeps the record on its side: nothing is compiled in
    the learner's process."""

    def __init__(self, backend_class: Any, label: str) -> None:
        schedules: dict[int, tuple[Any, list[Call], str | None]] = {}

        def get_scheduler(get: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
            sch, calls = recording(get(*args, **kwargs), label)
            node = kwargs.get("default_node")

            def schedule(make: Callable[..., Any], *a: Any, **k: Any) -> Any:
                made = make(*a, **k)
                schedules[id(made)] = (made, list(calls), node if isinstance(node, str) else None)
                return made

            return Proxy(sch, schedule=schedule)

        def compiler(get: Callable[..., Any], *args: Any, **options: Any) -> Any:
            dump_file = options.get("dump_file")
            prints = tuple(flag for flag in PRINTS if options.get(flag))
            stdout_then = sys.stdout  # TVM prints its IRs where stdout was at this call

            def compile(_: Callable[..., Any], schedule: Any, *a: Any, **k: Any) -> Any:
                found = schedules.get(id(schedule))
                if found is None or found[0] is not schedule:
                    raise ValueError(
                        f"{label}: this schedule was not made by a scheduler of the Backend "
                        "it was given: compile what `Backend(graph).get_scheduler()` schedules"
                    )
                made = Compile(
                    calls=found[1],
                    default_node=found[2],
                    dump_file=dump_file if isinstance(dump_file, str) else None,
                    shared_lib=bool(options.get("shared_lib", False)),
                    prints=prints,
                )
                return compiled_by_harness(made, stdout_then)

            return Proxy(get(*args, **options), compile=compile)

        def backend(make: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
            return Proxy(make(*args, **kwargs), get_scheduler=get_scheduler, get_compiler=compiler)

        self.Backend = Proxy(backend_class, __call__=backend)


#: Where a harness's Compiles serves a local Learner's code (the references, a harness
#: test's planted module): in this process. A learner's worker asks its parent instead.
_SERVING: list[Callable[[Any], Any]] = []


def ask(question: tuple) -> Any:
    """Ask the harness that serves this process's compiles (its parent, for a worker)."""
    if isolation._PARENT:
        return isolation.ask(question)
    return _SERVING[-1](question)


class HarnessModule:
    """A module the harness compiled and keeps: each evaluation is asked of it, and
    its times come back as XTC's evaluate() gives them, (times, code, message)."""

    def __init__(self, number: int, file_name: str = "") -> None:
        self._number = number
        self.file_name = file_name

    def get_evaluator(self, **options: Any) -> HarnessEvaluator:
        return HarnessEvaluator(self._number, options)


class HarnessEvaluator:
    def __init__(self, number: int, options: dict[str, Any]) -> None:
        self._number = number
        self._options = {
            name: int(value) for name, value in options.items() if name in EVALUATOR_OPTIONS
        }

    def evaluate(self) -> tuple[list[float], int, str]:
        times, code, message = ask(("evaluate", self._number, self._options))
        return list(times), code, message


def compiled_by_harness(made: Compile, stdout_then: Any = None) -> HarnessModule:
    """The harness compiles `made`; what its XTC printed is written here where XTC would
    have written it (`stdout_then`: stdout when get_compiler() was called); a compile it
    could not make raises here, in the learner's code, as XTC's would."""
    answer = ask(("compile", made))
    if isinstance(answer, str):
        raise RuntimeError(answer)
    number, printed = answer
    for stream, text in ((stdout_then or sys.stdout, printed.at_get_compiler),
                         (sys.stdout, printed.stdout), (sys.stderr, printed.stderr)):  # fmt: skip
        if text:
            stream.write(text)
            stream.flush()
    return HarnessModule(number, f"{made.dump_file}.so" if made.dump_file else "")


# --- in the harness ----------------------------------------------------------------------


def build(made: Compile, backend: Any, problem: Any, dump_file: str) -> tuple[Any, Printed]:
    """The compile `made`, built again on a fresh scheduler of the problem's own graph
    and compiled into `dump_file`, in a child with the kernel's time limit (workdir.apart),
    with what XTC printed; XTC's errors raised as they come."""

    def compile() -> tuple[Any, tuple[str, str, str]]:
        impl = backend.Backend(problem.graph())
        node = {"default_node": made.default_node} if made.default_node else {}
        scheduler = impl.get_scheduler(**node)
        for call in made.calls:
            getattr(scheduler, call.name)(*copy.deepcopy(call.args), **copy.deepcopy(call.kwargs))
        flags = dict.fromkeys(made.prints, True)
        at_get_compiler, stdout, stderr = io.StringIO(), io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(at_get_compiler):
            compiler = impl.get_compiler(dump_file=dump_file, shared_lib=made.shared_lib, **flags)
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            module = compiler.compile(scheduler.schedule())
        return module, (at_get_compiler.getvalue(), stdout.getvalue(), stderr.getvalue())

    key = (backend.name, problem.label, repr(made))
    module, texts = workdir.apart(compile, problem.graph(), "a compile your code asked for", key)
    return module, Printed(*texts) if made.prints else Printed()  # else XTC's chatter


def _evaluate(module: Any, options: dict[str, int]) -> tuple[list[float], int, str]:
    times, code, message = module.get_evaluator(**options).evaluate()
    return [float(t) for t in times], int(code), str(message)


@dataclass
class Compiles:
    """The harness's side of a learner's compiles: each compile asked is built and
    compiled here (`build`), each evaluation run in a child of this process; what each
    module's evaluations returned, and whether it ran, is kept here (`observations`),
    with the learner's dump_files, in the order asked."""

    backend: Any
    problem: Any
    workdir: Any
    label: str
    #: per compile, in order: its module's evaluations here (times of successful runs)
    observations: list[Observation] = field(default_factory=list)
    dump_files: list[str] = field(default_factory=list)
    modules: list[Any] = field(default_factory=list)
    #: per compile, in order: the compile asked (None: a module the harness kept), and
    #: what XTC printed while the harness compiled it
    made: list[Compile | None] = field(default_factory=list)
    printed: list[Printed] = field(default_factory=list)
    #: what else a question may ask (a search's items): name -> answer
    others: dict[str, Callable[..., Any]] = field(default_factory=dict)

    def keep(self, module: Any) -> int:
        """A module the harness compiled itself, handed to the learner's code as
        HarnessModule(its number): what that code does with it is observed here."""
        self.observations.append(Observation())
        self.modules.append(module)
        self.made.append(None)
        self.printed.append(Printed())
        return len(self.modules) - 1

    @property
    def compiles(self) -> int:
        return len(self.observations)

    def __call__(self, question: Any) -> Any:
        if not (isinstance(question, tuple) and question and isinstance(question[0], str)):
            raise KataFailure(f"{self.label}: the harness was asked {str(question)[:80]!r}")
        kind, *args = question
        if kind == "compile" and len(args) == 1 and isinstance(args[0], Compile):
            return self.compile(args[0])
        if kind == "evaluate" and len(args) == 2:
            return self.evaluate(*args)
        if kind in self.others:
            return self.others[kind](*args)
        raise KataFailure(f"{self.label}: the harness was asked {kind[:40]!r}")

    def compile(self, made: Compile) -> tuple[int, Printed] | str:
        """The new module's number and what XTC printed compiling it, or why it did not
        compile (raised in the learner's code, where a search catches it)."""
        if self.backend is None:
            raise KataFailure(f"{self.label}: nothing is compiled here")
        self.observations.append(Observation())
        self.made.append(made)
        if made.dump_file is not None:
            self.dump_files.append(made.dump_file)
        try:
            module, printed = build(
                made, self.backend, self.problem, self.workdir.dump_file("asked")
            )
        except Exception as exc:
            self.modules.append(None)
            self.printed.append(Printed())
            return f"{type(exc).__name__}: {exc}"
        self.modules.append(module)
        self.printed.append(printed)
        return len(self.modules) - 1, printed

    def evaluate(self, number: Any, options: Any) -> tuple[list[float], int, str]:
        if not (type(number) is int and 0 <= number < len(self.modules)):
            raise KataFailure(f"{self.label}: no module {str(number)[:20]} was compiled")
        module = self.modules[number]
        if module is None or not isinstance(options, dict):
            raise KataFailure(f"{self.label}: module {number} cannot be evaluated")
        asked = {}
        for name, (low, high) in EVALUATOR_OPTIONS.items():
            value = options.get(name)
            if value is not None:
                asked[name] = min(max(int(value), low), high)
        self.observations[number].runs += 1
        result = isolation.run_isolated(_evaluate, module, asked, what=f"{self.label}'s kernel")
        if result[1] == 0:
            self.observations[number].times.extend(result[0])
        return result

    @contextlib.contextmanager
    def serving(self) -> Any:
        """This process's compiles served here (a local Learner's code)."""
        _SERVING.append(self)
        try:
            yield self
        finally:
            _SERVING.remove(self)


def served(learner: Any, compiles: Compiles, probe: Callable[..., Any], *args: Any,
           time_limit_s: float) -> Any:  # fmt: skip
    """`probe(module, *args)` in the learner's process, each question it asks answered
    by `compiles`; its result. The whole run has `time_limit_s`, the harness's answers
    included."""
    if learner.local:
        with compiles.serving():
            return learner.run(probe, *args)
    worker = learner.submit(probe, *args)
    worker.what = compiles.label  # a crash's or a hang's message names it
    deadline = time.monotonic() + time_limit_s
    try:
        while True:
            worker.limit = max(1.0, deadline - time.monotonic())
            done, value = worker.step(compiles)
            if done:
                return value
            if time.monotonic() > deadline:
                raise isolation.KernelTimedOut(
                    f"{compiles.label} ran for more than {time_limit_s:g} s and was stopped"
                )
    except BaseException as exc:
        if not getattr(exc, "__notes__", None):  # raised here (a timeout, a refusal)
            learner.close(kill=True)  # it may still run, or wait for an answer
        raise
