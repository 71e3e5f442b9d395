"""The `task` fixture: one task of the kata under test, the one object its judges take.

A test names its task with a marker, `@pytest.mark.task("schedule_split")`; the object
then knows the function, the learner's module behind its process boundary, the problem
it runs on (the manifest's `problem`), the backend and the threads, so the test reads as
the task's three judgements and nothing else:

    @pytest.mark.task("schedule_split")
    def test_schedule_split_computes_the_matmul(task):
        task.assert_computes()

A kernel is compiled once per pytest session: the computes test, the speed test and a
numpy race of a task read one module (`compiled`). That is safe within a session only:
each run (a save, `watch`, the notebook's run button) is a new process and compiles
afresh. A learner's kernel is never written to the on-disk cache (module_cache.py).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import msgspec

from xtc_katas.checks import kinds, loop_nests
from xtc_katas.checks.learner import Learner
from xtc_katas.kata.manifest import Kata, Task
from xtc_katas.kata.problems import PROBLEMS, Problem
from xtc_katas.measure import numerics
from xtc_katas.measure.backends import KataBackend
from xtc_katas.measure.workdir import Workdir

if TYPE_CHECKING:
    from xtc_katas.checks.speed_rule import Bar

#: The inputs every numerics check feeds: random, signed, and the edge values.
INPUT_KINDS = ("random", "signed", "edge")

#: This session's compiled kernels, by what they are compiled from (TaskUnderTest.memo).
_COMPILED: dict[tuple[Any, ...], Any] = {}


_REFERENCES: dict[str, Learner] = {}


def reference_learner(kata: Kata) -> Learner:
    """The kata's reference solution, run in this process: the harness's own code."""
    if kata.id not in _REFERENCES:
        _REFERENCES[kata.id] = Learner(kata, solution=True, local=True)
    return _REFERENCES[kata.id]


@dataclass
class TaskUnderTest:
    kata: Kata
    task: Task
    learner: Learner  # the learner's module, or the reference's with --solutions
    backend: KataBackend
    workdir: Workdir
    #: Single-core FMA/s of this machine (measured on first call; machine_peak.py) and the
    #: record of the test's figures (the plugin's fixtures): what a speed verdict reports.
    peak: Callable[[], float] = lambda: 1.0
    record: Callable[..., None] = lambda **figures: None
    #: Probe the peak again when a kernel ran faster than it; True if it rose.
    reprobe: Callable[[], bool] = lambda: False
    #: The problem it runs on: the manifest's `problem` unless given.
    problem: Problem | None = None
    #: The threads its kernel is scheduled and raced on: `on_threads(n)` for a kind
    #: scheduled per thread count (kata 08's f(sch, threads)); None, the runtimes' default
    #: (every core: backends.set_thread_defaults), which a sequential kernel leaves idle.
    threads: int | None = None

    @property
    def cores(self) -> int:
        """The cores its % of peak is of: its threads, every core for a parallel task."""
        return self.threads or ((os.cpu_count() or 1) if self.task.parallel else 1)

    @classmethod
    def of_module(
        cls,
        kata: Kata,
        function: str,
        module: Any,
        backend: KataBackend,
        problem: Problem | None = None,
        threads: int | None = None,
    ) -> TaskUnderTest:
        """The task of `function` on a module already imported, run in this process: a
        harness test's planted answer, or a reference."""
        task = kata.task(function)
        if task is None:
            raise LookupError(f"{kata.id} has no task {function} (katas/manifest.toml)")
        learner = Learner.wrapping(kata, module)
        return cls(kata, task, learner, backend, None, problem=problem, threads=threads)  # type: ignore[arg-type]

    def on_threads(self, threads: int) -> TaskUnderTest:
        """The same task, its kernel scheduled for and raced on `threads` threads."""
        return dataclasses.replace(self, threads=threads)

    @property
    def function(self) -> str:
        return self.task.function

    def __post_init__(self) -> None:
        if self.problem is None:
            self.problem = PROBLEMS.get(self.task.problem)

    @property
    def kind(self) -> kinds.Kind:
        return kinds.kind_of(self.task)

    def reference(self, name: str | None = None) -> TaskUnderTest:
        """A reference solution of the manifest (`name`: "function" or "NN_kata.function",
        default the task's `reference`, else its own function) as a task under test, on
        the same backend, problem and threads: built and raced as the learner's kernel."""
        owner, function = self.kata.solution_of(name or self.task.reference or self.function)
        task = owner.task(function)
        if task is None:
            raise LookupError(f"{owner.id} has no task {function} (katas/manifest.toml)")
        task = msgspec.structs.replace(task, problem=self.task.problem, baseline=self.task.baseline)
        return dataclasses.replace(self, kata=owner, task=task, learner=reference_learner(owner))

    def memo(self, what: tuple[Any, ...], build: Callable[[], Any]) -> Any:
        """`build()`, once per session for this learner's function on this backend,
        problem, thread count and ISA; a failure is not kept, so each test meets it."""
        key = (
            self.learner,  # kept alive by the key: its id is never reused
            self.kata.id,
            self.function,
            self.backend.name,
            repr(self.problem),
            self.task.baseline,
            self.threads,
            os.environ.get("XTC_KATAS_ISA", ""),
            *what,
        )
        if key not in _COMPILED:
            _COMPILED[key] = build()
        return _COMPILED[key]

    def made(self) -> Any:
        """What the learner's function made (plain data), from ONE call of it per session:
        the nest the shape test reads is the one compiled, its unfused twin the same."""
        return self.memo(("made",), lambda: kinds.made(self))

    def scheduled(self) -> kinds.Built:
        """(XTC backend, checked scheduler) of the learner's function."""
        return kinds.rebuilt(self, self.made())[0]

    def compiled_pair(self) -> tuple[Any, Any]:
        """(the kernel, its unfused twin or None), compiled once per session; a
        reference's is kept in the on-disk cache (module_cache.py)."""

        def build() -> tuple[Any, Any]:
            twin = self.task.baseline == "unfused"
            fused, unfused = kinds.rebuilt(self, self.made(), twin)
            stem = self.function + (f"_{self.threads}threads" if self.threads else "")
            return self.compile(fused, stem), (
                self.compile(unfused, f"{stem}_unfused", unfused=True) if unfused else None
            )

        return self.memo(("compiled",), build)

    def compiled(self) -> Any:
        return self.compiled_pair()[0]

    def compile(self, built: kinds.Built, stem: str, unfused: bool = False) -> Any:
        """`built` compiled in the work dir; a reference's through the on-disk cache."""
        impl, scheduler = built
        key = None
        if self.learner.local and self.learner.solution:  # a reference: cached on disk
            key = {
                "kernel": "solution",
                "kata": self.kata.id,
                "function": self.function,
                "unfused": unfused,
                "threads": self.threads,
                "problem": repr(self.problem),
            }
        return self.workdir.compile(impl, scheduler.schedule(), stem, cache_key=key)

    def loop_nest(self) -> Any:
        return self.scheduled()[1].get_loop_nest()

    def assert_computes(self, kinds: tuple[str, ...] = INPUT_KINDS) -> None:
        """The compiled kernel computes the problem on harness-made inputs of `kinds`
        (numerics.py)."""
        numerics.assert_computes(self.compiled(), self.problem, self.backend.name, kinds)

    def shape_mistakes(self) -> list[str]:
        """What the loop nest lacks of the shape the manifest names for this task (its
        `shape`: checks of loop_nests.SHAPES, read on the task's problem); [] when it is
        there."""
        if not self.task.shape:
            raise LookupError(f"{self.kata.id}.{self.function}: no shape in the manifest")
        nest = self.loop_nest()
        mistakes = loop_nests.shape_mistakes(self.task.shape, nest, self.problem, self.backend.name)
        return self.kind.in_own_terms(mistakes, nest)

    def assert_shape(self, mistakes: list[str] | None = None) -> None:
        """No mistakes in the loop nest's shape: the manifest's shape checks for this task
        (shape_mistakes), or the `mistakes` a loop_nests check listed."""
        if mistakes is None:
            mistakes = self.shape_mistakes()
        loop_nests.require(mistakes, self.kata.id, self.function)

    def assert_speed(self, advice: str = "", kernel: Any = None, **recorded: Any) -> Bar:
        """Race the learner's kernel (or `kernel`, a compiled module of this task's problem:
        a search's best) against its baseline, the reference and the previous step's
        reference, on this machine; assert this run's bar (speed_judge.py). `advice`:
        the failure's "next:" line when the test knows the cause (default: the task's last
        hint); `recorded`: more figures for the summary."""
        from xtc_katas.checks import speed_judge

        return speed_judge.judge_speed(self, advice, kernel, **recorded)
