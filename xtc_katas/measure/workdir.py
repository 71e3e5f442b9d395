"""Compile schedules into a private directory, one fresh dump_file per compile.

Two XTC traps live here. Reusing a dump_file in one process makes an older module object
run the newer kernel (side-by-side timings then compare a kernel with itself). And TVM
writes ./tmpXXXX/schedule.py into the current directory. So each test compiles into its
own temporary directory, which is also its working directory, with a new file name per
compile. Kernels that do not change between runs (the naive schedule, the references)
can come from the on-disk cache instead (module_cache.py), still loaded from a fresh path.
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
        **opts: Any,
    ) -> Any:
        """Compile `schedule` with a fresh dump_file; XTC's chatter (stderr) is kept quiet.

        `cache_key`: what identifies a kernel that does not change between runs (the
        naive schedule, a reference): then the module may come from module_cache, keyed
        also by the backend, the ISA and the compiler options. Never pass it for the
        learner's kernel.

        A compile error is raised as CompileFailed, XTC's error chained below it: it is
        raised after the learner's function returned, so the traceback alone does not name
        the function (`stem`) whose schedule did not compile."""
        dump_file = self.dump_file(stem)
        if cache_key is None:
            return self._compile(backend_impl, schedule, dump_file, stem, opts)
        key = {
            **cache_key,
            "backend": f"{type(backend_impl).__module__}.{type(backend_impl).__name__}",
            "isa": machine.emulated_isa(),
            "options": sorted((name, repr(value)) for name, value in opts.items()),
        }
        return module_cache.compile_cached(
            key,
            backend_impl._graph,
            dump_file,
            lambda: self._compile(backend_impl, schedule, dump_file, stem, opts),
        )

    def _compile(
        self, backend_impl: Any, schedule: Any, dump_file: str, stem: str, opts: dict[str, Any]
    ) -> Any:
        compiler = backend_impl.get_compiler(dump_file=dump_file, shared_lib=True, **opts)
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
