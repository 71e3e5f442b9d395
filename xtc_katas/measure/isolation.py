"""Run code in a forked child, so that a crash, a hang or a tampering fails one test, never
the session or the judge: compiled kernels, and the learner's own code (checks/learner.py).

A kernel's child is forked: it inherits the loaded modules and the arguments (fork is safe
because the parent never runs a kernel: the runtimes' thread pools only start in
children). The learner's worker is `fresh`: forked from a forkserver that holds nothing
of the harness's references. What any child sends back is data, decoded by a schema
(wire.py): no pickle crosses from a child to its parent.
"""

from __future__ import annotations

import contextlib
import ctypes
import faulthandler
import functools
import importlib.machinery
import importlib.util
import io
import multiprocessing
import multiprocessing.forkserver
import multiprocessing.util
import os
import pickle
import signal
import sys
import tempfile
import threading
import traceback
import types
from collections.abc import Callable, Iterable, Iterator
from multiprocessing import popen_forkserver, reduction, spawn
from typing import Any, NoReturn, TypeVar
from unittest import mock

from xtc_katas.kata.failures import KataFailure
from xtc_katas.measure import module_cache, wire

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


def _forkserver_running() -> bool:
    """Whether this process started its forkserver (start_fresh_workers)."""
    server = multiprocessing.forkserver._forkserver  # type: ignore[attr-defined]
    return server._forkserver_pid is not None


#: Modules a fresh worker's forkserver imports once, so that each worker forked from it
#: starts with them: the harness's probes, numpy and XTC's graphs and schedulers.
PRELOAD = ("xtc_katas.checks.learner", "xtc_katas.checks.kinds", "xtc.graphs.xtc.op")


class _FreshPopen(popen_forkserver.Popen):
    """A forkserver's child that does not run the harness's __main__ again: a script's
    (pytest's, xtc-katas') __main__ is not the worker's, and would cost its imports."""

    def _launch(self, process_obj: Any) -> None:
        prepare = spawn.get_preparation_data

        def without_main(name: str) -> dict:
            data = prepare(name)
            data.pop("init_main_from_path", None)
            data.pop("init_main_from_name", None)
            return data

        spawn.get_preparation_data = without_main
        try:
            super()._launch(process_obj)
        finally:
            spawn.get_preparation_data = prepare


class _Output:
    """This process's fd 1 or 2 as it is when a fresh worker starts (pytest's capture of
    the test that starts it), passed to the worker as a fork would: its prints go where
    the harness's go, not to the terminal the forkserver was started from."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def __reduce__(self) -> tuple:
        return _dup_to, (reduction.DupFd(self.fd), self.fd)


def _dup_to(passed: Any, fd: int) -> int:
    """In a fresh worker: the fd passed made this process's `fd`."""
    os.dup2(passed.detach(), fd)
    return fd


class _FreshProcess(multiprocessing.context.ForkServerProcess):
    @staticmethod
    def _Popen(process_obj: Any) -> Any:
        return _FreshPopen(process_obj)


def start_fresh_workers(backends: Iterable[str] = ()) -> None:
    """Start the forkserver of the learner's workers now, in the background, with PRELOAD
    and `backends` ("mlir", "tvm") imported once there: the first worker then starts
    without importing them, and the harness goes on meanwhile."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([*PRELOAD, *(f"xtc.backends.{name}" for name in backends)])
    # The forkserver imports what this process imports: this sys.path, as PYTHONPATH.
    # Python's forkserver drops the sys.path it is handed (CPython gh-117378: 3.11 has it,
    # fixed in late 3.12 and 3.13 releases, whose maintainers name this workaround) and
    # imports PRELOAD from its own: '' (its folder, a test's temporary one), then the
    # editable install's finder, which names the checkout installed. In a copy of the
    # repository run with `python -m` from its root, the workers imported the checkout's
    # xtc_katas and loaded its katas. PYTHONSAFEPATH drops that ''.
    path = os.pathsep.join(os.path.abspath(entry) for entry in sys.path)
    # Its socket is made in multiprocessing's temp dir, under TMPDIR, and an AF_UNIX path
    # holds 107 bytes: a long TMPDIR (a grading's run folder under a test's tmp_path, in
    # the fresh-root CI) failed its bind with "AF_UNIX path too long". Python 3.14 falls
    # back to /tmp itself (multiprocessing.util._get_base_temp_dir); so does this.
    socket = os.path.join(tempfile.gettempdir(), "pymp-xxxxxxxx", "listener-xxxxxxxx")
    if len(socket) > 100:
        with mock.patch.object(tempfile, "tempdir", "/tmp"):
            multiprocessing.util.get_temp_dir()  # made once per process, then kept
    with mock.patch.dict(os.environ, PYTHONPATH=path, PYTHONSAFEPATH="1"):
        multiprocessing.forkserver.ensure_running()


#: The threads in_background started, which a fork waits for.
_BACKGROUND: list[threading.Thread] = []


def in_background(function: Callable[..., Any], *args: Any) -> None:
    """`function(*args)` in a thread of this process, started now: the harness imports its
    backends so while the learner's worker starts. A kernel's child is forked once it is
    done: a fork copies only the forking thread, and the child would wait forever on an
    import lock the thread held."""
    thread = threading.Thread(target=function, args=args, daemon=True)
    _BACKGROUND.append(thread)
    thread.start()


def _background_done() -> None:
    while _BACKGROUND:
        _BACKGROUND.pop().join()


def _send(connection: Any, message: Any) -> None:
    connection.send_bytes(wire.encode(message))


class _Refusal(Exception):
    """In a child: what it was to send is not plain data (wire.NotPlain's text)."""


def _wrapped(kind: Callable[[Any], Any], value: Any) -> Any:
    try:
        return kind(wire.to_wire(value))
    except wire.NotPlain as exc:
        raise _Refusal(str(exc)) from None


def _error(exc: BaseException) -> Any:
    """The message for an exception: a verdict for sys.exit, a refusal, or the error."""
    if isinstance(exc, _Refusal):
        return wire.Refused(str(exc))
    if isinstance(exc, SystemExit):
        text = f"the code called sys.exit({exc.code!r}), which ends nothing here"
        return wire.Error(f"{KataFailure.__module__}.{KataFailure.__qualname__}", text, [])
    try:
        return wire.error(exc)
    except Exception:  # its text or notes raised
        return wire.Error("builtins.RuntimeError", traceback.format_exc(), [])


class _Pickler(pickle.Pickler):
    """Pickles the parent's requests: a function or class of a module that was imported
    by its path (pytest's test modules) by that path, for a fresh child to import."""

    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, (type, types.FunctionType)):
            module = sys.modules.get(getattr(obj, "__module__", "") or "")
            if module is not None and _imported_by_path(module):
                return _by_path, (module.__name__, module.__file__, obj.__qualname__)
        return NotImplemented


def _imported_by_path(module: types.ModuleType) -> bool:
    """Whether `module` was imported from its file, where an import of its name would not
    find it (pytest's test modules, under --import-mode=importlib): a fresh child could
    not import it by name."""
    file = getattr(module, "__file__", None)
    if not file or module.__name__ == "__main__":
        return False
    found = _found_by_name(module.__name__)
    return not (found and os.path.exists(found) and os.path.samefile(found, file))


@functools.cache
def _found_by_name(name: str) -> str | None:
    """The file an import of `name` would load, by sys.meta_path's finders (None: none)."""
    spec, locations = None, None
    for depth, _ in enumerate(parts := name.split(".")):
        wanted = ".".join(parts[: depth + 1])
        finders = sys.meta_path if locations is None else [importlib.machinery.PathFinder]
        for finder in finders:
            with contextlib.suppress(Exception):
                spec = finder.find_spec(wanted, locations)  # type: ignore[union-attr]
                if spec:
                    break
        else:
            return None
        if spec is None or spec.origin is None:  # a namespace package: where the folder
            return None  # happens to be (pytest's rootdir), not an installed package
        locations = spec.submodule_search_locations
    return spec.origin if spec else None


def _by_path(name: str, file: str, qualname: str) -> Any:
    """In a child: `qualname` of the module `name`, imported from `file` if not yet."""
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, file)
        assert spec is not None and spec.loader is not None, file
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    found: Any = sys.modules[name]
    for part in qualname.split("."):
        found = getattr(found, part)
    return found


def _dumps(obj: Any) -> bytes:
    buffer = io.BytesIO()
    _Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(obj)
    return buffer.getvalue()


#: Linux's prctl option: a signal this process gets when its parent dies.
PR_SET_PDEATHSIG = 1
#: The connection of this process to its parent, in a worker (for `ask`).
_PARENT: list[Any] = []


def ask(question: Any) -> Any:
    """In a worker: ask the parent (Worker.step's `answer`) and wait for the answer."""
    connection = _PARENT[0]
    _send(connection, _wrapped(wire.Ask, question))
    return pickle.loads(connection.recv_bytes())


def _serve(connection: Any, request: tuple | None, *outputs: int) -> None:
    """The child's life: the first request (None: a fresh interpreter's, read from the
    pipe after the parent's environment, folder and sys.path), then each one the parent
    sends, until it sends None. A request is (function, args, kwargs, iterating); every
    answer is a wire message: Ok, Item ... Done, Error, Refused, or an Ask."""
    faulthandler.disable()  # the parent says a crash in one line
    # A worker may start children of its own (run_isolated), which die with it.
    multiprocessing.current_process().daemon = False
    _PARENT[:] = [connection]
    # Killed with its parent: its end of the pipe may stay open in a sibling's copy.
    ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    try:
        if request is None:
            environ, folder, path = pickle.loads(connection.recv_bytes())
            os.environ.clear()
            os.environ.update(environ)
            os.chdir(folder)
            sys.path[:] = path
            request = pickle.loads(connection.recv_bytes())
        while request is not None:
            function, call_args, kwargs, iterating = request
            try:
                if iterating:
                    for item in function(*call_args, **kwargs):
                        _send(connection, _wrapped(wire.Item, item))
                    message = wire.Done()
                else:
                    message = _wrapped(wire.Ok, function(*call_args, **kwargs))
            except BaseException as exc:  # sent back, raised again in the parent
                message = _error(exc)
            _send(connection, message)
            request = pickle.loads(connection.recv_bytes())
    except EOFError:  # the parent went away
        pass
    finally:
        connection.close()


class Worker:
    """A child that runs `first(*args)` (its result in `self.first`), then each call it is
    sent, until closed. `what` names what runs there in a crash's or a hang's message.

    A forked child (the default: a kernel's) inherits the loaded modules and the
    arguments. A `fresh` one (the learner's worker) is forked from a forkserver, a fresh
    interpreter that has imported PRELOAD and nothing of this process: it holds none of
    the references this process loaded; its arguments and calls are pickled to it. Either
    way, what comes back is data (wire.py), never a pickle."""

    def __init__(
        self,
        first: Callable[..., Any],
        *args: Any,
        what: str = "the compiled kernel",
        time_limit_s: float | None = None,
        hint: str = "",
        fresh: bool = False,
    ) -> None:
        self.what = what
        self.limit = TIME_LIMIT_S if time_limit_s is None else time_limit_s
        #: What a timeout's message says after "... was stopped.": its likely causes.
        self.hint = hint or KERNEL_HINT
        request = (first, args, {}, False)
        if fresh:
            context = multiprocessing.get_context("forkserver")
            if not _forkserver_running():
                start_fresh_workers()
        else:
            _background_done()
            module_cache.host_runtime()
            context = multiprocessing.get_context("fork")
        self.connection, child = context.Pipe()
        if fresh:  # fds 1 and 2 of now, dup2'ed in the child as the Process is unpickled
            sys.stdout.flush()
            sys.stderr.flush()
            args: tuple = (child, None, _Output(1), _Output(2))
            self.process = _FreshProcess(target=_serve, args=args, daemon=True)
        else:
            self.process = context.Process(target=_serve, args=(child, request), daemon=True)
        self.process.start()
        child.close()
        try:
            if fresh:
                self.connection.send_bytes(_dumps((dict(os.environ), os.getcwd(), sys.path)))
                self.connection.send_bytes(_dumps(request))
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
        self.connection.send_bytes(_dumps((function, args, kwargs, False)))

    def step(self, answer: Callable[[Any], Any] | None = None) -> tuple[bool, Any]:
        """Read the child's next message: (True, the result) when the call is done; a
        question it asks is answered with `answer` and gives (False, None)."""
        status, value = self._receive()
        if status != "ask":
            return True, value
        if answer is None:
            raise KataFailure(f"{self.what} asked a question nobody answers")
        self._answer(_dumps(answer(value)))
        return False, None

    def _answer(self, data: bytes) -> None:
        """Send `data` to the child, which must read it within the limit: a child that
        asks and reads no answer fills the pipe, and a plain send waited forever, holding
        the run to its timeout (outside red team, round 5: forty compile questions unread).
        Past the limit the child is ended, which ends the send."""
        failed: list[OSError] = []

        def send() -> None:
            try:
                self.connection.send_bytes(data)
            except OSError as exc:  # the child ended: said below, as its stop
                failed.append(exc)

        sender = threading.Thread(target=send, daemon=True)
        sender.start()
        sender.join(self.limit)
        if sender.is_alive():
            self.process.kill()
            sender.join(5)
            self.close(kill=True)
            raise KernelTimedOut(
                f"{self.what} asked the harness a question and did not read its answer for "
                f"{self.limit:g} s: it was stopped. Ask through the Backend the test hands "
                "you, and let each call return before the next."
            )
        if failed:
            raise failed[0]

    def iterate(self, function: Callable[..., Any], *args: Any) -> Iterator[Any]:
        """Each item of `function(*args)` in the child, as it arrives."""
        self.connection.send_bytes(_dumps((function, args, {}, True)))
        return (value for _, value in iter(self._receive, ("done", None)))

    def _receive(self) -> tuple[str, Any]:
        """The child's next (status, value): "ok", "item", "done" or "ask"."""
        try:
            if not self.connection.poll(self.limit):
                self.close(kill=True)
                raise KernelTimedOut(
                    f"{self.what} ran for more than {self.limit:g} s and was stopped. {self.hint}"
                )
            data = self.connection.recv_bytes(wire.MAX_MESSAGE_BYTES)
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
        except OSError:  # longer than MAX_MESSAGE_BYTES: refused unread
            self.refuse(f"a message of more than {wire.MAX_MESSAGE_BYTES} bytes")
        return self._decoded(data)

    def _decoded(self, data: bytes) -> tuple[str, Any]:
        """The (status, value) a child's message holds; its error raised; NotPlainData for
        anything else."""
        try:
            message = wire.decode(data)
            value = None
            if isinstance(message, wire.Ask):
                value = wire.from_wire(message.question)
            elif isinstance(message, (wire.Ok, wire.Item)):
                value = wire.from_wire(message.value)
            elif isinstance(message, wire.Error):
                value = wire.exception(message)
        except wire.NotPlain as exc:
            self.refuse(str(exc))
        except (TypeError, ValueError, RecursionError) as exc:  # a record's own check
            self.refuse(f"{type(exc).__name__}: {exc}")
        if isinstance(message, wire.Refused):
            self.refuse(message.text)
        if isinstance(message, wire.Error):
            raise value
        return message.__struct_config__.tag, value

    def refuse(self, why: str) -> NoReturn:
        """What the child sent is not plain data: this worker ends (what it sends next is
        not to be read), and the call fails with NotPlainData, naming `why`."""
        self.close(kill=True)
        raise NotPlainData(
            f"{self.what} gave back something the harness does not take across the "
            f"process boundary ({why}): return plain values (numbers, strings, lists, "
            "tuples, dicts, numpy arrays of numbers) or an XTC graph, not a class or "
            "function of your own"
        )

    def close(self, kill: bool = False) -> None:
        if self.process.is_alive():
            if not kill:
                with contextlib.suppress(OSError):  # a pipe the child already closed
                    self.connection.send_bytes(_dumps(None))
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
