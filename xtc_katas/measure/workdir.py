"""Compile schedules into a private directory, one fresh dump_file per compile.

Reusing a dump_file in one process makes an older module object run the newer kernel
(a race then compares a kernel with itself), and TVM writes ./tmpXXXX/ into the current
directory: so each test compiles into its own directory, its working directory too, with
a new file name per compile. Kernels that do not change between runs may come from the
on-disk cache (module_cache.py), still loaded from a fresh path.
"""

from __future__ import annotations

import contextlib
import io
import itertools
from pathlib import Path
from typing import Any

from xtc_katas.kata.failures import KataFailure
from xtc_katas.measure import machine, module_cache


class CompileFailed(KataFailure):
    """XTC accepted the schedule's primitives, then failed to compile the kernel."""


class Workdir:
    """A per-test directory that hands out never-reused dump_file paths."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._count = itertools.count()

    def dump_file(self, stem: str = "kernel") -> str:
        """An absolute, never-used path for a compile's output (MLIR needs the dir to exist)."""
        return str(self.path / f"{stem}_{next(self._count)}")

    def compile(
        self,
        backend_impl: Any,
        schedule: Any,
        stem: str = "kernel",
        cache_key: dict[str, Any] | None = None,
    ) -> Any:
        """Compile `schedule` with a fresh dump_file; XTC's chatter (stderr) is kept quiet.
        With `cache_key` (a kernel that does not change between runs: never the learner's),
        the module may come from module_cache, keyed also by the backend and the ISA.
        A compile error is raised as CompileFailed, naming the function (`stem`) whose
        schedule did not compile: it returned before, so the traceback does not."""
        dump_file = self.dump_file(stem)
        if cache_key is None:
            return self._compile(backend_impl, schedule, dump_file, stem)
        key = {
            **cache_key,
            "backend": f"{type(backend_impl).__module__}.{type(backend_impl).__name__}",
            "isa": machine.emulated_isa(),
        }
        return module_cache.compile_cached(
            key,
            backend_impl._graph,
            dump_file,
            lambda: self._compile(backend_impl, schedule, dump_file, stem),
        )

    def _compile(self, backend_impl: Any, schedule: Any, dump_file: str, stem: str) -> Any:
        compiler = backend_impl.get_compiler(dump_file=dump_file, shared_lib=True)
        chatter = io.StringIO()
        try:
            with contextlib.redirect_stderr(chatter):
                return compiler.compile(schedule)
        except Exception as exc:
            said = [line for line in chatter.getvalue().splitlines() if "error" in line.lower()]
            raise CompileFailed(
                f"{stem}(): XTC accepted the schedule, then could not compile it "
                f"({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
                + (f"; {said[-1].strip()}" if said else "")
                + "). The task's loop-nest test names what the nest lacks or has in the "
                "wrong place: run it, e.g. pytest -k <the function's name> katas/<kata>"
            ) from exc
