"""Compile schedules into a private directory, one fresh dump_file per compile.

Two XTC traps live here. Reusing a dump_file in one process makes an older module object
run the newer kernel (side-by-side timings then compare a kernel with itself). And TVM
writes ./tmpXXXX/schedule.py into the current directory. So each test compiles into its
own temporary directory, which is also its working directory, with a new file name per
compile.
"""

from __future__ import annotations

import contextlib
import io
import itertools
from pathlib import Path
from typing import Any


class Workdir:
    """A per-test directory that hands out never-reused dump_file paths."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._count = itertools.count()

    def dump_file(self, stem: str = "kernel") -> str:
        """An absolute, never-used path for a compile's output (MLIR needs the dir to exist)."""
        return str(self.path / f"{stem}_{next(self._count)}")

    def compile(self, backend_impl: Any, schedule: Any, stem: str = "kernel", **opts: Any) -> Any:
        """Compile `schedule` with a fresh dump_file; XTC's chatter (stderr) is kept quiet."""
        compiler = backend_impl.get_compiler(
            dump_file=self.dump_file(stem), shared_lib=True, **opts
        )
        with contextlib.redirect_stderr(io.StringIO()):
            return compiler.compile(schedule)
