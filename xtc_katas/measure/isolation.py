"""Run code in a forked child, so that a crash, a hang or a tampering fails one test, never
the session or the judge: compiled kernels, and the learner's own code (checks/learner.py).

A forked child inherits the loaded modules and the arguments; what comes back is pickled,
and the parent unpickles only plain data (PlainUnpickler). Fork is safe because the parent
never runs a kernel: the runtimes' thread pools only start in children.
"""

from __future__ import annotations

import contextlib
import ctypes
import faulthandler
import io
import multiprocessing
import os
import pickle
import signal
import traceback
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from xtc_katas.kata.failures import KataFailure
from xtc_katas.measure import module_cache

T = TypeVar("T")

#: A kernel run (numerics or a side-by-side timing) longer than this is a hang.
TIME_LIMIT_S = float(os.environ.get("XTC_KATAS_KERNEL_TIME_LIMIT", "120"))
#: A learner's whole search (katas 06, 07: compiles included) longer than this is a hang.
SEARCH_TIME_LIMIT_S = 4 * TIME_LIMIT_S


KERNEL_HINT = (
    "Likely causes: a schedule that makes it very slow (a scalar loop over a big problem, a "
    "huge unroll), or an endless loop. Raise the limit with "
    "XTC_KATAS_KERNEL_TIME_LIMIT=<seconds> if it is just slow."
)


class KernelCrashed(KataFailure):
    """The child process died from a signal or exited."""


class KernelTimedOut(KataFailure):
    """The child ran past the time limit and was killed."""


class NotPlainData(KataFailure):
    """The child sent back something not plain data (a class or function of its own)."""


#: Packages whose classes may come back from a child: they are the harness's, Python's,
#: numpy's or XTC's code, never the child's own.
PLAIN_PACKAGES = (
    "builtins",
    "collections",
    "datetime",
    "pathlib",
    "numpy",
    "xtc",
    "tvm",
    "tvm_ffi",
    "mlir",
    "xtc_katas",
    "tblib",  # distributed's exceptions pickle through it, once imported
)
#: The functions pickle calls to rebuild plain objects (no other function is called), and
#: the plain classes of other modules.
REBUILDERS = {
    ("copyreg", "_reconstructor"),
    ("copyreg", "__newobj__"),
    ("_codecs", "encode"),
    *(("tblib.pickling_support", f"unpickle_{what}") for what in ("exception", "traceback")),
    ("tblib.pickling_support", "unpickle_exception_with_attrs"),
    ("types", "SimpleNamespace"),
}
NUMPY_REBUILDERS = {"_reconstruct", "scalar", "_frombuffer"}


class PlainUnpickler(pickle.Unpickler):
    """Unpickles plain data only: a class of PLAIN_PACKAGES, or numpy's and pickle's own
    rebuilding functions, so that nothing the child sends runs code in the parent."""

    def find_class(self, module: str, name: str) -> Any:
        package = module.split(".")[0]
        if (module, name) in REBUILDERS or (package == "numpy" and name in NUMPY_REBUILDERS):
            return super().find_class(module, name)
        found = super().find_class(module, name) if package in PLAIN_PACKAGES else None
        if isinstance(found, type):
            return found
        raise pickle.UnpicklingError(f"{module}.{name} is not plain data")


def plain_loads(data: bytes) -> Any:
    return PlainUnpickler(io.BytesIO(data)).load()


def _sendable(exc: BaseException) -> BaseException:
    """The exception to send back: itself with its traceback as a note (a pickled one loses
    its frames); a verdict for sys.exit; its text if it is not plain data."""
    text = "".join(traceback.format_exception(exc)).rstrip()
    if isinstance(exc, SystemExit):
        return KataFailure(f"the code called sys.exit({exc.code!r}), which ends nothing here")
    try:
        plain_loads(pickle.dumps(exc))
    except Exception:
        return RuntimeError(f"{type(exc).__name__}: {exc}\n\n{text}")
    exc.add_note(text)
    return exc


#: Linux's prctl option: a signal this process gets when its parent dies.
PR_SET_PDEATHSIG = 1
#: The connection of this process to its parent, in a worker (for `ask`).
_PARENT: list[Any] = []


def ask(question: Any) -> Any:
    """In a worker: ask the parent (Worker.step's `answer`) and wait for the answer."""
    connection = _PARENT[0]
    connection.send(("ask", question))
    return connection.recv()


def _serve(connection: Any, request: tuple) -> None:
    """The child's life: the first request, then each one the parent sends, until it sends
    None. A request is (function, args, kwargs, iterating); every answer is ("ok", value),
    ("item", value) ... ("done", None), or ("error", exception)."""
    faulthandler.disable()  # the parent says a crash in one line
    # A worker may start children of its own (run_isolated), which die with it.
    multiprocessing.current_process().daemon = False
    _PARENT[:] = [connection]
    # Killed with its parent: its end of the pipe may stay open in a sibling's copy.
    ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    try:
        while request is not None:
            function, call_args, kwargs, iterating = request
            try:
                if iterating:
                    for item in function(*call_args, **kwargs):
                        connection.send(("item", item))
                    connection.send(("done", None))
                else:
                    result = function(*call_args, **kwargs)
                    try:  # pickled whole before a byte is written
                        connection.send(("ok", result))
                    except Exception as exc:  # a class or function of its own
                        connection.send(("unplain", f"{type(exc).__name__}: {exc}"))
            except BaseException as exc:  # sent back, raised again in the parent
                try:
                    connection.send(("error", _sendable(exc)))
                except Exception:
                    connection.send(("error", RuntimeError(traceback.format_exc())))
            request = connection.recv()
    except EOFError:  # the parent went away
        pass
    finally:
        connection.close()


class Worker:
    """A forked child that runs `first(*args)` (arguments inherited, not pickled; its result
    in `self.first`), then each call it is sent, until closed. `what` names what runs
    there in a crash's or a hang's message."""

    def __init__(
        self,
        first: Callable[..., Any],
        *args: Any,
        what: str = "the compiled kernel",
        time_limit_s: float | None = None,
        hint: str = "",
    ) -> None:
        self.what = what
        self.limit = TIME_LIMIT_S if time_limit_s is None else time_limit_s
        #: What a timeout's message says after "... was stopped.": its likely causes.
        self.hint = hint or KERNEL_HINT
        module_cache.host_runtime()
        context = multiprocessing.get_context("fork")
        self.connection, child = context.Pipe()
        request = (first, args, {}, False)
        self.process = context.Process(target=_serve, args=(child, request), daemon=True)
        self.process.start()
        child.close()
        try:
            self.first = self._receive()[1]
        except BaseException:  # `first` failed: its child, which would wait on, goes
            self.close(kill=True)
            raise

    @property
    def alive(self) -> bool:
        return self.process.is_alive()

    def call(self, function: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """`function(*args, **kwargs)` in the child (all three pickled to it)."""
        self.submit(function, *args, **kwargs)
        return self.step()[1]

    def submit(self, function: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
        """Start `function(*args, **kwargs)` in the child; `step` reads its progress."""
        self.connection.send((function, args, kwargs, False))

    def step(self, answer: Callable[[Any], Any] | None = None) -> tuple[bool, Any]:
        """Read the child's next message: (True, the result) when the call is done; a
        question it asks is answered with `answer` and gives (False, None)."""
        status, value = self._receive()
        if status != "ask":
            return True, value
        if answer is None:
            raise KataFailure(f"{self.what} asked a question nobody answers")
        self.connection.send(answer(value))
        return False, None

    def iterate(self, function: Callable[..., Any], *args: Any) -> Iterator[Any]:
        """Each item of `function(*args)` in the child, as it arrives."""
        self.connection.send((function, args, {}, True))
        return (value for _, value in iter(self._receive, ("done", None)))

    def _receive(self) -> tuple[str, Any]:
        """The child's next (status, value): "ok", "item", "done" or "ask"."""
        try:
            if not self.connection.poll(self.limit):
                self.close(kill=True)
                raise KernelTimedOut(
                    f"{self.what} ran for more than {self.limit:g} s and was stopped. {self.hint}"
                )
            data = self.connection.recv_bytes()
        except (EOFError, ConnectionError):  # the child died before answering
            self.process.join()
            code = self.process.exitcode or 0
            raise KernelCrashed(  # an exit code: os._exit() or the like, in the child's code
                f"{self.what} ended its process (exit code {code}) before answering: "
                "os._exit() and the like end the harness's child, not just the function. "
                "Return (or raise) instead."
                if code >= 0
                else f"{self.what} crashed ({signal.Signals(-code).name}). A kernel crashes "
                "when it reads or writes outside its arrays: check the schedule's tile sizes "
                "and splits against the problem's shape."
            ) from None
        try:
            status, value = plain_loads(data)
        except Exception as exc:
            status, value = "unplain", str(exc)
        if status == "unplain":
            raise NotPlainData(
                f"{self.what} gave back something the harness does not take across the "
                f"process boundary ({value}): return plain values (numbers, strings, lists, "
                "dicts, numpy arrays) or XTC's own objects, not a class or function of your own"
            )
        if status == "error":
            raise value
        return status, value

    def close(self, kill: bool = False) -> None:
        if self.process.is_alive():
            if not kill:
                with contextlib.suppress(OSError):  # a pipe the child already closed
                    self.connection.send(None)
                    self.process.join(timeout=5)
            if self.process.is_alive():
                self.process.kill()
        self.process.join()
        self.connection.close()

    def __enter__(self) -> Worker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close(kill=exc[0] is not None)


def run_isolated(
    function: Callable[..., T],
    *args: Any,
    what: str = "the compiled kernel",
    time_limit_s: float | None = None,
) -> T:
    """`function(*args)` in a forked child; its result, its exception, or a crash report."""
    with Worker(function, *args, what=what, time_limit_s=time_limit_s) as child:
        return child.first
