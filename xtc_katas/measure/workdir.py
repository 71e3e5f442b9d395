"""Compile schedules into a private directory, one fresh dump_file per compile.

Reusing a dump_file in one process makes an older module object run the newer kernel
(a race then compares a kernel with itself), and TVM writes ./tmpXXXX/ into the current
directory: so each test compiles into its own directory, its working directory too, with
a new file name per compile. Kernels that do not change between runs may come from the
on-disk cache (module_cache.py), still loaded from a fresh path.

Every compile runs in a forked child with a time limit (`apart`, 30 s by default): a
schedule XTC takes minutes to compile (k and j unrolled whole: MLIR ran past 300 s)
fails its test with a message, where it held the learner's run, or a grading, to its
timeout (outside red team, round 4). The module is loaded here from the library the
child wrote.
"""

from __future__ import annotations

import contextlib
import io
import itertools
from collections.abc import Callable
from pathlib import Path
from typing import Any

from xtc_katas.kata.failures import KataFailure
from xtc_katas.measure import isolation, machine, module_cache

#: A compile's share of the kernel's time limit (isolation.TIME_LIMIT_S): 30 s by default.
#: The suite's slowest, kata 08's 1024^3 reference, compiles and runs twice in under 6 s
#: (2-vCPU AMD EPYC family 25 model 1, load 2); each task's problem is compiled apart, so
#: an endless one costs a kata this per task and backend.
COMPILE_SHARE = 0.25
#: Why a compile ran past the limit, after "... was stopped.".
COMPILE_HINT = (
    "Likely cause: a loop unrolled whole, or by hundreds: every unrolled iteration is code "
    "the compiler generates and optimizes. Unroll the register tile's small loops (by 4 to "
    "32), never k or a whole axis. A compile may take a quarter of "
    "XTC_KATAS_KERNEL_TIME_LIMIT=<seconds>: raise it if yours is just slow."
)
#: How the compile's child tells what XTC's chatter said of its error (a note).
SAID = "xtc-katas, the compiler said: "
#: The compiles this process stopped, by what they compiled: not tried again (each test of
#: a task compiles its schedule; the first one's wait is enough).
_STOPPED: dict[tuple[str, ...], isolation.KernelTimedOut] = {}


def signature(graph: Any) -> str:
    """What a compile depends on in `graph`, without its tensors' uids (a process-wide
    count: the same problem's graph, built again for each test, has others)."""
    types = [(tuple(t.shape), str(t.dtype)) for t in graph.inputs_types]
    nodes = [
        (n.name, n.operator.name, sorted(vars(n.operator.attrs).items()))
        for n in graph.nodes.values()
    ]
    return repr((graph.name, types, nodes))


def apart(
    compile: Callable[[], tuple[Any, Any]], graph: Any, what: str, key: Any = None
) -> tuple[Any, Any]:
    """`compile()` (a module and anything else it returns as data) in a forked child
    that may run COMPILE_SHARE of isolation.TIME_LIMIT_S: the module, loaded here from
    the library it wrote, and the rest. Its errors are raised here; past the limit,
    KernelTimedOut naming `what`, and again at once for the same `key` (what was
    compiled) in this process."""
    if key is not None and key in _STOPPED:
        raise _STOPPED[key]

    def child() -> tuple[dict[str, Any], str, Any]:
        module, rest = compile()
        return module_cache.fields(module), module.file_name, rest

    try:
        limit = isolation.TIME_LIMIT_S * COMPILE_SHARE
        with isolation.Worker(child, what=what, time_limit_s=limit, hint=COMPILE_HINT) as worker:
            fields, file_name, rest = worker.first
    except isolation.KernelTimedOut as exc:
        if key is not None:
            _STOPPED[key] = exc
        raise
    return module_cache.host_module(fields, file_name, graph), rest


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
        graph = backend_impl._graph
        try:
            return apart(
                lambda: (self._compile_here(backend_impl, schedule, dump_file), None),
                graph,
                f"{stem}(): XTC's compile of its schedule",
                key=(type(backend_impl).__qualname__, signature(graph), str(schedule)),
            )[0]
        except KataFailure:  # the child's stop or crash, said as such
            raise
        except Exception as exc:  # XTC's own error, crossed from the child: kept below
            said = next(
                (n[len(SAID) :] for n in getattr(exc, "__notes__", ()) if n.startswith(SAID)), ""
            )
            raise CompileFailed(
                f"{stem}(): XTC accepted the schedule, then could not compile it "
                f"({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
                + (f"; {said}" if said else "")
                + "). The task's loop-nest test names what the nest lacks or has in the "
                "wrong place: run it, e.g. pytest -k <the function's name> katas/<kata>"
            ) from exc

    @staticmethod
    def _compile_here(backend_impl: Any, schedule: Any, dump_file: str) -> Any:
        """In the compile's child: XTC's compile, its error raised with the last line of
        its chatter that names an error as a note (SAID)."""
        compiler = backend_impl.get_compiler(dump_file=dump_file, shared_lib=True)
        chatter = io.StringIO()
        try:
            with contextlib.redirect_stderr(chatter):
                return compiler.compile(schedule)
        except Exception as exc:
            said = [line for line in chatter.getvalue().splitlines() if "error" in line.lower()]
            if said:
                exc.add_note(SAID + said[-1].strip())
            raise
