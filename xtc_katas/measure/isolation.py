"""Run compiled kernels in a forked child, so a crash or a hang fails one test, not the run.

A learner's schedule can compile into a kernel that segfaults (an out-of-bounds access),
aborts, or never returns. In the pytest process that would end the session and lose the
progress record. So every kernel the harness runs (numerics, timing) runs in a child
made with fork(): the child inherits the loaded modules and the input arrays at no copy
cost, runs, and sends back its result through a pipe. A child killed by a signal becomes
`KernelCrashed` ("the compiled kernel crashed (SIGSEGV)"); one that outlives its time
limit is killed and becomes `KernelTimedOut`.

Fork is safe here because the parent never runs a kernel: the runtimes' thread pools
(TVM's, OpenMP's) are only ever started in children. OpenBLAS re-initialises its threads
after fork (pthread_atfork).
"""

from __future__ import annotations

import faulthandler
import functools
import multiprocessing
import os
import signal
import traceback
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

from xtc_katas.kata.failures import KataFailure
from xtc_katas.measure import module_cache

T = TypeVar("T")

#: A kernel run (numerics or a side-by-side timing) longer than this is a hang.
TIME_LIMIT_S = float(os.environ.get("XTC_KATAS_KERNEL_TIME_LIMIT", "120"))
#: A learner's whole search (katas 06, 07: compiles included) longer than this is a hang.
SEARCH_TIME_LIMIT_S = 4 * TIME_LIMIT_S


class KernelCrashed(KataFailure):
    """The kernel's process died from a signal."""


class KernelTimedOut(KataFailure):
    """The kernel ran past the time limit and was killed."""


def _child(connection: Any, function: Callable[..., Any], args: tuple) -> None:
    # pytest's faulthandler, inherited through fork, would print a Python stack dump
    # over the report; the parent turns the signal into one readable line instead.
    faulthandler.disable()
    try:
        connection.send(("ok", function(*args)))
    except BaseException as exc:  # sent back whole, raised again in the parent
        # A pickled exception loses its traceback: keep the child's as a note.
        exc.add_note("".join(traceback.format_exception(exc)).rstrip())
        try:
            connection.send(("error", exc))
        except Exception:  # an exception that does not pickle: send its text
            connection.send(("error", RuntimeError("".join(traceback.format_exception(exc)))))
    finally:
        connection.close()


@functools.cache
def _prepare_host_runtime() -> None:
    """Build XTC's host runtime once, in the parent, before any fork.

    XTC compiles its C host runtime with gcc (~0.6 s) the first time a process passes
    arrays to a kernel. Done in each child, every MLIR kernel run would pay it again;
    done here once, every child inherits it, and the module cache keeps the library for
    the next process (module_cache.host_runtime). Building it runs no kernel: fork stays
    safe.
    """
    from xtc.runtimes.host.runtime import RuntimeType, resolve_runtime

    module_cache.host_runtime()
    resolve_runtime(RuntimeType.HOST)


def run_isolated(
    function: Callable[..., T],
    *args: Any,
    what: str = "the compiled kernel",
    time_limit_s: float | None = None,
) -> T:
    """`function(*args)` in a forked child; its result, its exception, or a crash report."""
    with _Child(_child, function, args, what, time_limit_s) as child:
        status, value = child.receive()
    if status == "error":
        raise value
    return value


def iterate_isolated(
    function: Callable[..., Iterable[T]],
    *args: Any,
    what: str = "a kernel of your search",
    time_limit_s: float | None = None,
) -> Iterator[T]:
    """Iterate `function(*args)` in a forked child, yielding each item as it arrives.

    For a learner's search run outside pytest (`xtc-katas explore`): a progress bar
    shows each candidate when it is measured, and a crashing or endless candidate stops
    the search with a message instead of the command. The time limit is per item.
    """
    with _Child(_iterating_child, function, args, what, time_limit_s) as child:
        while True:
            status, value = child.receive()
            if status == "item":
                yield value
            elif status == "error":
                raise value
            else:
                return


def _iterating_child(connection: Any, function: Callable[..., Any], args: tuple) -> None:
    def items() -> Any:
        for item in function(*args):
            connection.send(("item", item))
        return None

    _child(connection, items, ())


class _Child:
    """A forked child running `target(sender, function, args)`, read through a pipe."""

    def __init__(
        self,
        target: Callable[..., None],
        function: Callable[..., Any],
        args: tuple,
        what: str,
        time_limit_s: float | None,
    ) -> None:
        self.what = what
        self.limit = TIME_LIMIT_S if time_limit_s is None else time_limit_s
        _prepare_host_runtime()
        context = multiprocessing.get_context("fork")
        self.receiver, sender = context.Pipe(duplex=False)
        self.process = context.Process(target=target, args=(sender, function, args), daemon=True)
        self.process.start()
        sender.close()

    def __enter__(self) -> _Child:
        return self

    def receive(self) -> tuple[str, Any]:
        try:
            if not self.receiver.poll(self.limit):
                self.process.kill()
                self.process.join()
                raise KernelTimedOut(
                    f"{self.what} ran for more than {self.limit:g} s and was stopped. Likely "
                    "causes: a schedule that makes it very slow (a scalar loop over a big "
                    "problem, a huge unroll), or an endless loop. Raise the limit with "
                    "XTC_KATAS_KERNEL_TIME_LIMIT=<seconds> if it is just slow."
                )
            return self.receiver.recv()
        except EOFError:  # the child died before sending anything
            self.process.join()
            code = self.process.exitcode or 0
            name = signal.Signals(-code).name if code < 0 else f"exit code {code}"
            raise KernelCrashed(
                f"{self.what} crashed ({name}). A kernel crashes when it reads or writes "
                "outside its arrays: check the schedule's tile sizes and splits against the "
                "problem's shape."
            ) from None

    def __exit__(self, *exc: object) -> None:
        self.receiver.close()
        if self.process.is_alive() and exc[0] is not None:
            self.process.kill()
        self.process.join()
