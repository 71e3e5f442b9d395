"""The two code generators, by name, imported only when a test needs them: importing XTC's
backends takes seconds, which the red run of an untouched kata must not pay.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import importlib
import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from xtc_katas.measure import machine

BACKENDS = ("mlir", "tvm")


@dataclass(frozen=True)
class KataBackend:
    """A backend as the tests see it: its name and XTC's Backend class."""

    name: str

    @property
    def Backend(self) -> Any:
        machine.remember_cpu_reading()  # XTC reads the CPU at every TVM compile
        set_thread_defaults()
        return emulating(importlib.import_module(f"xtc.backends.{self.name}").Backend)

    def __str__(self) -> str:
        return self.name


@functools.cache
def emulating(backend_class: Any) -> Any:
    """The Backend class itself, or, under XTC_KATAS_ISA, one that compiles for that ISA:
    every compile goes through it, a learner's search included."""
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


def import_backends(names: Iterable[str]) -> None:
    """Import these backends ("mlir", "tvm") now, and keep what exists then out of the
    garbage collector's walks: the harness, in the background while the learner's worker
    starts (plugin/options.py). One that fails raises again where a test needs it, which
    says why."""
    for name in names:
        with contextlib.suppress(Exception):
            _ = KataBackend(name).Backend
    # What they made lives as long as the process: out of the collector's sight, a full
    # collection no longer walks it. One took 0.32-0.34 s with MLIR's imported, and pytest
    # 9 makes two as a run ends (2-vCPU AMD EPYC family 25 model 1, at a load of 8).
    gc.freeze()


def set_thread_defaults() -> None:
    """Let parallel kernels use every core, unless the user chose otherwise, before any
    kernel runs (both runtimes read it once): TVM defaults to half of them (ONE on 2
    vCPUs), and to pinning its threads, which ties one to a core another process may be
    keeping busy."""
    threads = os.cpu_count() or 1
    os.environ.setdefault("TVM_NUM_THREADS", str(threads))
    os.environ.setdefault("OMP_NUM_THREADS", str(threads))
    os.environ.setdefault("TVM_BIND_THREADS", "0")
