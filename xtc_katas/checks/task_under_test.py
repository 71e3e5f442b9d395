"""The `task` fixture: one task of the kata under test, as its tests use it.

A test names its task with a marker, `@pytest.mark.task("schedule_split")`; the fixture
then knows the function, the problem it runs on (the manifest's `problem`) and the
backend, so the test reads as the task's three judgements and nothing else:

    @pytest.mark.task("schedule_split")
    def test_schedule_split_computes_the_matmul(task):
        task.assert_computes()

Every call builds on a fresh scheduler. A kernel is compiled once per pytest session:
the computes test, the speed test and kata 08's numpy race of a task read one module
(`compiled`), so a learner's `pytest katas/10_gemm -k gemm_pack` pays one compile of
their kernel, not one per test. That is safe within a session only: the learner's module
is imported once per session, so its code cannot change under it; the next run (a save,
`watch`, the notebook's run button) is a new process and compiles afresh. Nothing here
is ever written to disk (the on-disk cache, module_cache.py, never holds a learner's
kernel).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any

from xtc_katas.checks import loop_nests
from xtc_katas.checks.learner_schedules import TaskKind, kind_of
from xtc_katas.kata.manifest import Kata, Task
from xtc_katas.kata.problems import PROBLEMS, Problem
from xtc_katas.measure import numerics
from xtc_katas.measure.backends import KataBackend
from xtc_katas.measure.workdir import Workdir

if TYPE_CHECKING:  # annotations only: the plugin hands a SpeedJudge in
    from xtc_katas.checks.speed_judge import SpeedJudge
    from xtc_katas.checks.speed_rule import Bar

#: The inputs every numerics check feeds: random, signed, and the edge values.
INPUT_KINDS = ("random", "signed", "edge")

#: This session's compiled kernels, by what they are compiled from (TaskUnderTest.memo).
_COMPILED: dict[tuple[Any, ...], Any] = {}


@dataclass
class TaskUnderTest:
    kata: Kata
    task: Task
    module: ModuleType  # the learner's stub module, or the reference with --solutions
    backend: KataBackend
    workdir: Workdir
    speed_judge: SpeedJudge
    #: The race against numpy (race_against_numpy.assert_keeps_up_with_numpy), handed
    #: in by the plugin as the speed judge is.
    numpy_judge: Callable[[TaskUnderTest, str], Bar]
    #: The test's fixtures by name (request.getfixturevalue): a race against numpy times
    #: numpy with pytest-benchmark's `benchmark`, asked for only then.
    fixture: Callable[[str], Any]
    #: The threads its kernel is scheduled for, for a kind scheduled per thread count
    #: (kata 08's: `task.on_threads(n)`); every other kind ignores it.
    threads: int = 1

    def on_threads(self, threads: int) -> TaskUnderTest:
        """The same task, its kernel scheduled for `threads` threads."""
        return dataclasses.replace(self, threads=threads)

    @property
    def function(self) -> str:
        return self.task.function

    @property
    def problem(self) -> Problem:
        if self.task.problem not in PROBLEMS:
            raise LookupError(f"{self.kata.id}.{self.function}: no problem in the manifest")
        return PROBLEMS[self.task.problem]

    @property
    def kind(self) -> TaskKind:
        """The task's kind (learner_schedules.KINDS): how its function becomes a schedule."""
        return kind_of(self.task)

    def scheduled(self, unfused: bool = False) -> tuple[Any, Any]:
        """(XTC backend, scheduler) after the learner's function, checked by the harness;
        `unfused`: with the function's fusion left out."""
        return self.kind.schedule(
            self.kata, self.module, self.function, self.backend, self.problem, unfused, self.threads
        )

    def scheduled_pair(self) -> tuple[tuple[Any, Any], tuple[Any, Any]]:
        """((backend, scheduler) fused, (backend, scheduler) unfused), both from ONE call
        of the learner's function: the unfused one is that schedule minus its fusion."""
        return self.kind.schedule_pair(
            self.kata, self.module, self.function, self.backend, self.problem
        )

    def memo(self, what: tuple[Any, ...], build: Callable[[], Any]) -> Any:
        """`build()`, once per session for this module's function on this backend,
        problem, thread count and ISA (`what` says which of its kernels); a failure is
        not kept, so each test that asks meets it."""
        key = (
            # the function object itself: a module re-imported, or a function replaced
            # (a harness test's monkeypatch), is a new key; the key keeps it alive, so
            # its id is never reused
            getattr(self.module, self.function, None),
            getattr(self.module, "__file__", None),
            self.kata.id,
            self.function,
            self.backend.name,
            self.task.problem,
            self.threads,
            os.environ.get("XTC_KATAS_ISA", ""),
            *what,
        )
        if key not in _COMPILED:
            _COMPILED[key] = build()
        return _COMPILED[key]

    def compiled(self, unfused: bool = False) -> Any:
        """The learner's kernel (`unfused`: with its fusion left out), compiled once per
        session (memo)."""

        def build() -> Any:
            impl, scheduler = self.scheduled(unfused)
            stem = f"{self.function}{'_unfused' if unfused else ''}"
            stem += f"_{self.threads}threads" if self.threads != 1 else ""
            return self.workdir.compile(impl, scheduler.schedule(), stem=stem)

        return self.memo(("one", unfused), build)

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

    def assert_speed(self, advice: str = "") -> Bar:
        """Race the learner's kernel against naive, the reference and the previous task's
        reference (speed_judge.py), or, for a task whose baseline is "unfused", against
        itself unfused (one call's schedule, and the same minus its fusion), or, for a
        kind raced against numpy (kata 08), with its reference against numpy on
        `threads` threads (race_against_numpy.py); assert this run's bar (speed_rule.py).
        `advice`: the failure's "next:" line when the test knows the cause from the loop
        nest (default: the task's last hint)."""
        if self.kind.numpy_race:
            return self.numpy_judge(self, advice)
        if self.task.baseline == "unfused":  # both from one call of the function
            learner, unfused = self.memo(
                ("pair",),
                lambda: self.kind.compiled(
                    self.kata, self.module, self.task, self.backend, self.problem, self.workdir
                ),
            )
        else:  # the kernel the computes test compiled
            learner, unfused = self.compiled(), None
        return self.speed_judge(
            self.function, self.problem, learner, advice, learner_unfused=unfused
        )
