"""The learner's module, behind one process boundary.

The harness never imports the learner's module: a `Learner` forks a worker
(isolation.Worker) that imports it and runs its functions there, and only plain data comes
back, from which the harness compiles, times and judges. So nothing the learner's code
does (rebinding a judge, crashing, hanging, sys.exit) reaches a verdict: a crash or a hang
is its own verdict, and the next call forks a new worker.

`learner.f(*args)` calls `f` there; `learner.run(probe, *args)` runs `probe(module, *args)`
there, for a harness function that hands the learner's code objects living there (a
recording scheduler, a counting Backend) and returns what it saw. `local=True` runs the
references, the harness's own code, in this process through the same probes.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

from xtc_katas.checks.confine import confine_learner
from xtc_katas.kata import loader
from xtc_katas.kata.manifest import Kata
from xtc_katas.kata.stubs import Loaded
from xtc_katas.measure import machine
from xtc_katas.measure.isolation import KERNEL_HINT, TIME_LIMIT_S, KernelTimedOut, Worker

#: Seconds one call of a learner's function may run (it records a schedule, builds a
#: graph, returns a spec: well under a second when right); its import too. A search
#: passes its own limit (isolation.SEARCH_TIME_LIMIT_S).
CALL_TIME_LIMIT_S = float(os.environ.get("XTC_KATAS_CALL_TIME_LIMIT", "30"))
CALL_HINT = (
    "Likely causes: an endless loop, or work that does not belong in it (the tests compile "
    "and time what it returns). The kata's other tests go on; a function stopped once is "
    "not called again in this test module. Raise the limit with "
    "XTC_KATAS_CALL_TIME_LIMIT=<seconds> if it is just slow."
)
#: The module the worker imported (in the worker only).
_LOADED: dict[str, ModuleType] = {}
#: The references' learners, by kata (reference_learner).
_REFERENCES: dict[str, Learner] = {}


def _load(kata: Kata, solution: bool) -> None:
    machine.emulate_cpu_info()  # as the harness did at its start: the worker is fresh
    if not solution:
        confine_learner()  # in a confined grading only
    _LOADED["module"] = loader.load(kata, solution)


def run_probe(probe: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """In a worker: `probe(the module it imported, *args, **kwargs)`."""
    return probe(_LOADED.get("module"), *args, **kwargs)


def call(module: ModuleType, function: str, *args: Any, **kwargs: Any) -> Any:
    """The probe of a plain call: `module.function(*args, **kwargs)`."""
    return getattr(module, function)(*args, **kwargs)


class Learner:
    """The kata's module (the learner's stub, or the reference with `solution`), each call
    of its functions run in a worker process; `local`: in this process (the references)."""

    def __init__(self, kata: Kata, solution: bool | None = None, local: bool = False) -> None:
        self.kata = kata
        self.solution = loader.solutions_selected() if solution is None else solution
        self.local = local
        self._worker: Worker | None = None
        self._module: ModuleType | None = None
        self._stopped: dict[str, str] = {}  # what timed out -> its message
        self._import_failed: Exception | None = None
        self.loaded = Loaded.read(loader.module_path(kata, self.solution))
        if local:
            self._module = loader.load(kata, self.solution)

    @classmethod
    def wrapping(cls, kata: Kata, module: Any) -> Learner:
        """A local Learner of a module already imported (a harness test's planted one)."""
        learner = cls.__new__(cls)
        learner.kata, learner.solution, learner.local = kata, False, True
        learner._worker, learner._module, learner._stopped = None, module, {}
        learner._import_failed = None
        learner.loaded = Loaded(frozenset(dir(module)), frozenset())
        return learner

    def _start(self) -> Worker:
        """The worker, forked at the first call from the forkserver, a fresh interpreter
        that imported the backends itself (isolation.start_fresh_workers): nothing is
        imported here first, so this process's own imports (backends.import_in_background)
        go on while the worker starts and runs the call."""
        if self._worker is None or not self._worker.alive:  # first call, or after a crash
            if self._import_failed is not None:  # the same module fails the same way
                raise self._import_failed.with_traceback(None)
            try:
                self._worker = Worker(
                    _load, self.kata, self.solution, what=f"{self.kata.id}'s code",
                    time_limit_s=CALL_TIME_LIMIT_S, hint=CALL_HINT, fresh=True,
                )  # fmt: skip
            except Exception as exc:  # its import raised, hung or crashed
                self._import_failed = exc
                raise
        return self._worker

    def run(
        self,
        probe: Callable[..., Any],
        *args: Any,
        what: str = "",
        time_limit_s: float | None = None,
        **kwargs: Any,
    ) -> Any:
        """`probe(module, *args, **kwargs)` where the module lives; its plain result.
        `what` names it in a crash's or a hang's message (default: the function called),
        `time_limit_s` bounds it (default: CALL_TIME_LIMIT_S). One that ran past its limit
        is not run again: the same timeout, at once."""
        if self._module is not None:
            return probe(self._module, *args, **kwargs)
        named = f"{args[0]}()" if probe is call and args else getattr(probe, "__name__", "")
        label = what or f"{self.kata.id} › {named}"
        if label in self._stopped:
            raise KernelTimedOut(self._stopped[label])
        worker = self._start()
        worker.what = label
        worker.limit = time_limit_s or CALL_TIME_LIMIT_S
        worker.hint = CALL_HINT
        try:
            return worker.call(run_probe, probe, *args, **kwargs)
        except BaseException as exc:
            if isinstance(exc, KernelTimedOut):
                self._stopped[label] = str(exc)
            if not getattr(exc, "__notes__", None):  # raised here (a timeout): not by it
                exc.add_note(f"while running {worker.what}")
                self.close(kill=True)  # it may still run: the next call forks anew
            raise

    @property
    def module(self) -> Any:
        """The module itself, for a local Learner (in this process) only."""
        if self._module is None:
            raise LookupError(f"{self.kata.id}'s module lives in its own process")
        return self._module

    def submit(self, probe: Callable[..., Any], *args: Any) -> Worker:
        """Start `probe(module, *args)` in the worker and return it, to read its progress
        (`Worker.step`) beside other workers': kata 12's race runs two at once."""
        assert self._module is None, "a local module runs no probe in the background"
        worker = self._start()
        worker.limit, worker.hint = TIME_LIMIT_S, KERNEL_HINT  # a race's steps: as before
        worker.submit(run_probe, probe, *args)
        return worker

    def iterate(
        self, probe: Callable[..., Iterator[Any]], *args: Any, time_limit_s: float | None = None
    ) -> Iterator[Any]:
        """Each item of `probe(module, *args)` as the worker yields it (`time_limit_s`
        bounds the wait for each)."""
        if self._module is not None:
            return probe(self._module, *args)
        worker = self._start()
        worker.limit = time_limit_s or CALL_TIME_LIMIT_S
        worker.hint = CALL_HINT
        return worker.iterate(run_probe, probe, *args)

    def __getattr__(self, function: str) -> Callable[..., Any]:
        if function.startswith("_"):
            raise AttributeError(function)

        def in_worker(*args: Any, **kwargs: Any) -> Any:
            return self.run(call, function, *args, **kwargs)

        in_worker.__name__ = function
        return in_worker

    def close(self, kill: bool = False) -> None:
        if self._worker is not None:
            self._worker.close(kill)
            self._worker = None

    def __enter__(self) -> Learner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def reference_learner(kata: Kata) -> Learner:
    """The kata's reference solution, run in this process: the harness's own code."""
    if kata.id not in _REFERENCES:
        _REFERENCES[kata.id] = Learner(kata, solution=True, local=True)
    return _REFERENCES[kata.id]
