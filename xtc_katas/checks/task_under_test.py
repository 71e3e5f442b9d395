"""The `task` fixture: one task of the kata under test, the one object its judges take.

A test names its task with a marker; the object knows the function, the learner's module
behind its process boundary, the problem, the backend and the threads, and builds every
kernel a judgement needs (the learner's, its unfused twin, the references, the naive):

    @pytest.mark.task("schedule_split")
    def test_schedule_split_computes_the_matmul(task):
        task.assert_computes()

What the function made, and the kernels compiled from it, are kept for the session (`memo`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import msgspec

from xtc_katas.checks import kinds, loop_nests, schedule
from xtc_katas.checks.learner import Learner, reference_learner
from xtc_katas.checks.schedule import ScheduleMistake
from xtc_katas.kata.failures import KataFailure
from xtc_katas.kata.manifest import Kata, Task
from xtc_katas.kata.problems import PROBLEMS, Problem
from xtc_katas.measure import numerics
from xtc_katas.measure.backends import KataBackend
from xtc_katas.measure.timing import NumpyKernel
from xtc_katas.measure.workdir import Workdir

if TYPE_CHECKING:
    from xtc_katas.checks.speed_rule import Bar

Built = tuple[Any, Any]  # (XTC backend, checked scheduler)

#: This session's schedules and kernels, by what they are made from (TaskUnderTest.memo).
_COMPILED: dict[tuple[Any, ...], Any] = {}


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

    def __post_init__(self) -> None:
        if self.problem is None:
            self.problem = PROBLEMS.get(self.task.problem)

    @property
    def cores(self) -> int:
        """The cores its % of peak is of: its threads, every core for a parallel task."""
        return self.threads or ((os.cpu_count() or 1) if self.task.parallel else 1)

    @classmethod
    def of_module(
        cls, kata: Kata, function: str, module: Any, backend: KataBackend, **given: Any
    ) -> TaskUnderTest:
        """The task of `function` on a module already imported, run in this process (a
        harness test's planted answer); `given`: its problem, its threads."""
        learner, task = Learner.wrapping(kata, module), kata.task(function)
        return cls(kata, task, learner, backend, None, **given)  # type: ignore[arg-type]

    def on_threads(self, threads: int) -> TaskUnderTest:
        """The same task, its kernel scheduled for and raced on `threads` threads."""
        return dataclasses.replace(self, threads=threads)

    @property
    def function(self) -> str:
        return self.task.function

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

    def made(self, option: Any = None) -> Any:
        """What the learner's function made, as plain data: its kind's probe's, in its
        process, from ONE call per session (the nest the shape test reads is the one
        compiled, its unfused twin the same). `option`: what `show` asks of the kind."""
        kind = self.kind
        if kind.probe is None:
            raise LookupError(
                f"{self.kata.id}.{self.function} is of kind {kind.name!r}, which builds no "
                "schedule (katas/manifest.toml)"
            )
        label = f"{self.kata.id} › {self.function}"
        asked = kinds.Asked(self.function, label, self.backend, self.problem, self.threads, option)
        return self.memo(
            ("made", option),
            lambda: self.learner.run(
                kind.probe, asked, what=f"{label}()", time_limit_s=kind.time_limit_s
            ),
        )

    def schedules(self, option: Any = None, twin: bool = False) -> tuple[Built, Built | None]:
        """(its checked schedule, with `twin` the same without its fusion, else None), both
        built here on fresh schedulers from what the function made, once."""
        data, kata, function = self.made(option), self.kata.id, self.function
        label = f"{kata} › {function}{self.kind.call}"

        def built(unfused: bool) -> Built:
            if isinstance(data, dict):  # a spec
                spec = schedule.without_fusion(data) if unfused else data
                return schedule.schedule_spec(
                    kata, spec, f"{function}()", self.backend, self.problem
                )
            try:
                impl, scheduler = schedule.replay(data, self.backend, self.problem, unfused)
            except Exception as exc:
                if not unfused:
                    raise
                raise ScheduleMistake(
                    f"{label}: the same calls without fuse_consumer_at/fuse_producer_at (the "
                    f"schedule unfused, that yours races) fail in XTC with {type(exc).__name__}: "
                    f"{exc}. Make every other call stand without the fusion"
                ) from exc
            schedule.check_schedule(scheduler, kata, function, self.problem)
            return impl, scheduler

        fused = built(unfused=False)
        if not twin:
            return fused, None
        unfused = built(unfused=True)
        if schedule.nest_signature(fused[1]) == schedule.nest_signature(unfused[1]):
            raise ScheduleMistake(
                f"{label}: this schedule fuses nothing (no fuse_consumer_at or "
                'fuse_producer_at call, no "fuse_consumer" annotation), so racing it against '
                "itself unfused measures nothing: fuse the relu into C's nest"
            )
        return fused, unfused

    def scheduled(self) -> Built:
        return self.schedules()[0]

    def loop_nest(self) -> Any:
        return self.scheduled()[1].get_loop_nest()

    def compiled_pair(self) -> tuple[Any, Any]:
        """(the kernel, its unfused twin or None), compiled once per session."""

        def build() -> tuple[Any, Any]:
            fused, unfused = self.schedules(twin=self.task.baseline == "unfused")
            stem = self.function + (f"_{self.threads}threads" if self.threads else "")
            return self.compile(fused, stem), (
                self.compile(unfused, f"{stem}_unfused", unfused=True) if unfused else None
            )

        return self.memo(("compiled",), build)

    def compiled(self) -> Any:
        return self.compiled_pair()[0]

    def compile(self, built: Built, stem: str, unfused: bool = False) -> Any:
        """`built` compiled in the work dir; a reference's through the on-disk cache
        (module_cache.py), a learner's never."""
        impl, scheduler = built
        key = None
        if self.learner.local and self.learner.solution:
            key = {
                "kernel": "solution",
                "kata": self.kata.id,
                "function": self.function,
                "unfused": unfused,
                "threads": self.threads,
                "problem": repr(self.problem),
            }
        return self.workdir.compile(impl, scheduler.schedule(), stem, cache_key=key)

    def assert_computes(self, inputs: tuple[str, ...] = numerics.INPUTS) -> None:
        """The compiled kernel computes the problem on harness-made inputs (numerics.py);
        its verdict is kept for the session, for the race (numerics_failure)."""
        kernel, checked = self.compiled(), self.memo(("numerics",), dict)
        try:
            numerics.assert_computes(kernel, self.problem, self.backend.name, inputs)
        except AssertionError as wrong:
            checked[inputs] = str(wrong)
            raise
        checked[inputs] = ""

    def numerics_failure(self) -> str:
        """Why the learner's kernel computes wrong values, or "": the session's numerics
        verdicts (the task's numerics test ran first), else one check made now. A race
        times a kernel only once its values are right: a kernel that skips work runs fast
        (kata 09 fused at the reduction read 1.15x with 75% of its outputs NaN, issue 57)."""
        checked = self.memo(("numerics",), dict)
        told = bool(checked)  # by the task's numerics test, in this session
        if not told:
            with contextlib.suppress(AssertionError):
                self.assert_computes()
        wrong = next((why for why in checked.values() if why), "")
        if not wrong:
            return ""
        where = f"{self.kata.id} › {self.function}()"
        return (
            f"{where}: no speed is measured on {self.backend} for a kernel that computes wrong "
            "values: "
            + (
                f"this task's numerics test (test_{self.function}_computes_…) failed; "
                "its message tells what is wrong"
                if told
                else wrong
            )
            + f"\n  next: fix the values first, then run: pytest katas/{self.kata.id} "
            f"-k {self.function}"
        )

    def shape_mistakes(self) -> list[str]:
        """What the loop nest lacks of the manifest's `shape` for this task, in the terms
        the learner writes; [] when it is there."""
        if not self.task.shape:
            raise LookupError(f"{self.kata.id}.{self.function}: no shape in the manifest")
        nest = self.loop_nest()
        mistakes = loop_nests.shape_mistakes(self.task.shape, nest, self.problem, self.backend.name)
        return self.kind.in_own_terms(mistakes, nest)

    def assert_shape(self) -> None:
        """No mistakes in the loop nest's shape: the manifest's shape checks for this task."""
        loop_nests.require(self.shape_mistakes(), self.kata.id, self.function)

    def naive(self) -> Any:
        """The untransformed schedule of the task's problem: a race's usual baseline."""
        impl, scheduler = schedule.fresh_scheduler(self.backend, self.problem)
        key = {"kernel": "naive", "problem": repr(self.problem)}
        return self.workdir.compile(impl, scheduler.schedule(), "naive", cache_key=key)

    def race_kernels(self, kernel: Any = None) -> dict[str, Any]:
        """The kernels of the task's race, by role; `kernel` stands for the learner's (a
        search's best, whose numerics its test checks). The baseline is named by the task:
        "naive", "numpy", or for kata 09 each side's own "..._unfused". The learner's own
        kernel is raced only once it computes the problem (numerics_failure)."""
        if kernel is None:
            wrong = self.numerics_failure()
            if wrong:
                raise WrongValuesNotRaced(wrong)
        reference = self.reference()
        if self.task.baseline == "unfused":
            learner, learner_unfused = self.compiled_pair()
            reference_kernel, reference_unfused = reference.compiled_pair()
            return {
                "learner_unfused": learner_unfused,
                "learner": kernel or learner,
                "reference_unfused": reference_unfused,
                "reference": reference_kernel,
            }
        numpy = self.kind.numpy_race
        found = {
            "numpy" if numpy else "naive": NumpyKernel(self.problem) if numpy else self.naive(),
            "learner": kernel or self.compiled(),
            "reference": reference.compiled(),
        }
        if self.task.previous:
            found["previous"] = self.reference(self.task.previous).compiled()
        return found

    def assert_speed(
        self,
        advice: str = "",
        kernel: Any = None,
        shape_told: list[str] | None = None,
        **recorded: Any,
    ) -> Bar:
        """Race the learner's kernel (or `kernel`, a compiled module of this task's problem:
        a search's best) against its baseline, the reference and the previous step's
        reference, on this machine; assert this run's bar (speed_judge.py). `advice`:
        the failure's "next:" line when the test knows the cause (default: `speed_advice`);
        `recorded`: more figures for the summary. With the task's shape test failing (the
        manifest's checks, or `shape_told`, the mistakes its own shape test adds), the
        failure gives its figures and points to that test's cause, whatever the test's
        advice: a cause is told once per task (issue 57)."""
        from xtc_katas.checks import speed_judge

        found = self.race_kernels(kernel)
        told = kernel is None and bool(shape_told or (self.task.shape and self.shape_mistakes()))
        advice = self.shape_pointer() if told else advice or self.speed_advice()
        return speed_judge.judge_speed(self, found, advice, brief=told, **recorded)

    def shape_pointer(self) -> str:
        """The "next:" line of a slow kernel whose shape test fails: that test tells what
        the loop nest lacks (told there, and in a learner's run in the same block: not
        twice)."""
        return (
            "your loop nest lacks this step's shape, which this task's shape test tells: "
            f"pytest katas/{self.kata.id} -k {self.function}"
        )

    def speed_advice(self) -> str:
        """A slow kernel's "next:" line, where its test names none: with a shape check
        failing, the shape test's pointer (shape_pointer), or, with the shape there, where
        to look first (their own nest and code, the lesson, the hints) and, last, how to
        diff it against the reference: a learner who has tried everything is not left
        stuck, and one who has not is sent to their own code before the answer."""
        if self.task.shape and self.shape_mistakes():
            return self.shape_pointer()
        yours = "your loop nest has this step's shape, and still" if self.task.shape else "yours"
        number, function = self.kata.number, self.function
        return (
            f"{yours} runs slower than the reference: read your loop nest and the code it "
            f"became (xtc-katas show {number} {function} --nest --asm) against the lesson's "
            f"arithmetic, then xtc-katas hint {number} {function}; only as a last resort, "
            "the reference's answer beside yours: --nest --diff --spoil"
        )


class WrongValuesNotRaced(KataFailure):
    """The learner's kernel computes wrong values: its speed is not measured."""
