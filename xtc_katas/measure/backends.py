"""The two code generators, by name, imported only when a test needs them.

Importing XTC's MLIR backend costs ~0.5 s and TVM's ~1.3 s: the red run of an untouched
kata must not pay for them, so nothing here imports XTC at module level.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from typing import Any

from xtc_katas.measure import cpu_reading, machine

BACKENDS = ("mlir", "tvm")


@dataclass(frozen=True)
class KataBackend:
    """A backend as the tests see it: its name and XTC's Backend class."""

    name: str

    @property
    def Backend(self) -> Any:
        cpu_reading.remember()  # XTC reads the CPU at every TVM compile: 1.3 s each time
        set_thread_defaults()
        if self.name == "mlir":
            from xtc.backends.mlir import Backend
        elif self.name == "tvm":
            from xtc.backends.tvm import Backend
        else:
            raise ValueError(f"unknown backend {self.name!r}; choose one of {BACKENDS}")
        return emulating(Backend)

    def __str__(self) -> str:
        return self.name


@functools.cache
def emulating(backend_class: Any) -> Any:
    """The Backend class itself, or, under XTC_KATAS_ISA, one that compiles for that ISA.

    Every compile goes through it: the harness's, the solutions', and a learner's search
    that was handed this class, so an emulated run is an AVX2 machine's end to end.
    """
    options = machine.compiler_options(backend_class)
    if not options:
        return backend_class

    class EmulatedBackend(backend_class):  # type: ignore[misc, valid-type]
        def get_compiler(self, **kwargs: Any) -> Any:
            return super().get_compiler(**{**options, **kwargs})

    # It stands for the backend it wraps: same name, same module (which tells TVM's
    # classes from MLIR's).
    EmulatedBackend.__name__ = EmulatedBackend.__qualname__ = backend_class.__name__
    EmulatedBackend.__module__ = backend_class.__module__
    return EmulatedBackend


def set_thread_defaults(threads: int | None = None) -> None:
    """Let parallel kernels use every core unless the user chose otherwise.

    TVM's runtime defaults to hardware_concurrency/2 threads (ONE on a 2-vCPU machine) and
    reads TVM_NUM_THREADS once, when the first parallel kernel runs; MLIR's OpenMP reads
    OMP_NUM_THREADS. Set both before any kernel runs, never overriding the user.

    TVM also pins its threads to cores by default (the main thread to core 0). On a shared
    machine that ties a worker to a core another process may be keeping busy. TVM's
    parallel reference of kata 04 (128x256x512), timed side by side with naive: pinned,
    97x to 114x naive in 10 quiet runs, and 56x in one of 20 runs under a CPU hog;
    unpinned, 112x to 114x in the same two series. So TVM_BIND_THREADS=0 unless the
    user set it.
    """
    threads = threads or os.cpu_count() or 1
    os.environ.setdefault("TVM_NUM_THREADS", str(threads))
    os.environ.setdefault("OMP_NUM_THREADS", str(threads))
    os.environ.setdefault("TVM_BIND_THREADS", "0")
