"""Friendly failure messages: name the kata, the function and what to do next.

A learner's first failure should be one readable line, not a traceback: an untouched stub
raises NotImplementedError, and we answer with the kata, the function and its first hint.
When XTC itself rejects what the learner wrote (unknown axis, bad spec), XTC's message
comes first, with the learner's line it came from; the original traceback is kept in the
test's report, below the message, which `pytest -v` and `--tb=long` print (and the
grader records): we never drop an error, we only keep it out of the default view.
"""

from __future__ import annotations

import re
import traceback
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, NamedTuple

from xtc_katas import ROOT

if TYPE_CHECKING:  # for annotations only: failures sits below every other module
    from xtc_katas.kata.manifest import Kata


class KataFailure(AssertionError):
    """A failure the harness found in the learner's work; its message is the whole story.

    The message names the kata, the function and the fix, so the report shows it alone,
    without the harness's own frames. When XTC raised first (`raise ... from exc`), that
    original error is printed below the message, traceback included.
    """


class StubNotImplemented(NotImplementedError):
    """Raised by the harness for a test whose function is still the untouched stub."""

    def __init__(self, kata: Kata, function: str) -> None:
        super().__init__(f"{kata.id}: {function}() is not implemented yet")
        self.function = function


def raise_mistakes(kind: type[KataFailure], heading: str, mistakes: list[str]) -> None:
    """Fail with `heading` and one bulleted line per mistake; no mistakes, no failure.

    The one format of the shape, schedule and search checks: the learner sees every
    mistake at once, not the first of several runs.
    """
    if mistakes:
        listed = "\n".join(f"  - {m}" for m in mistakes)
        raise kind(f"{heading}:\n{listed}")


#: One frame of a traceback printed as text: its file, line, function and source line.
FRAME = re.compile(r'File "([^"]+)", line (\d+), in (\S+)\n(?:[ \t]+(\S.*))?')


def frames(tb: TracebackType | None, exc: BaseException) -> list[tuple]:
    """The traceback's frames, innermost last, as (file, line, function, source). An
    exception raised in a child process (isolation.py) arrives without its frames: the
    child's traceback is then in its notes, as text, and its frames are those."""
    notes = "\n".join(getattr(exc, "__notes__", []))
    found = [(f, int(n), name, code or "") for f, n, name, code in FRAME.findall(notes)]
    return found or [(f.filename, f.lineno, f.name, f.line or "") for f in traceback.extract_tb(tb)]


def learner_function(kata: Kata, tb: TracebackType | None, exc: BaseException) -> str | None:
    """The innermost function of the kata's module (stub or solution) in the traceback."""
    module_files = {str(kata.stub_path()), str(kata.solution_path())}
    names = [name for file, _, name, _ in frames(tb, exc) if file in module_files]
    notes = "\n".join(getattr(exc, "__notes__", []))
    names += re.findall(rf"^while running {re.escape(kata.id)} › (\w+)\(\)", notes, re.M)
    return names[-1] if names else None


def _where(kata: Kata) -> str:
    stub = kata.stub_path().relative_to(ROOT)
    return f"edit {stub}, then run: pytest katas/{kata.id}"


def not_implemented(kata: Kata, function: str) -> str:
    task = kata.task(function)
    hint = task.hints[0] if task and task.hints else "see the lesson, README.md"
    return (
        f"{kata.id} › {function}() is not implemented yet.\n"
        f"  hint: {hint}\n"
        f"  {_where(kata)}   (more hints: xtc-katas hint {kata.number} {function})"
    )


class Told(NamedTuple):
    """A failure in the learner's words: `said`, what a learner's run prints (plugin/
    summary.py); `original`, the error the harness caught (XTC's, or the learner's process'
    traceback), and `keep_traceback`, pytest's traceback of the test: both printed below
    `said` only by pytest -v or --tb=long, and kept in the report."""

    said: str
    original: str = ""
    keep_traceback: bool = False


def learner_line(kata: Kata, tb: TracebackType | None, exc: BaseException) -> str:
    """Where in the kata's module the error came from, `path:line: code`, or ""."""
    module_files = {str(kata.stub_path()), str(kata.solution_path())}
    inside = [(f, n, code) for f, n, _, code in frames(tb, exc) if f in module_files]
    if not inside:
        return ""
    file, line, code = inside[-1]
    shown = Path(file).relative_to(ROOT) if Path(file).is_relative_to(ROOT) else file
    return f"{shown}:{line}: {code.strip()}"


def describe(kata: Kata, exc: BaseException, tb: TracebackType | None) -> Told | None:
    """The failure in the learner's words; None: leave pytest's report as it is."""
    if isinstance(exc, StubNotImplemented):
        return Told(not_implemented(kata, exc.function))
    if type(exc).__name__ == "Failed" and str(exc).startswith("Timeout"):
        function = learner_function(kata, tb, exc)
        where = f" › {function}()" if function else ""
        return Told(
            f"{kata.id}{where}: this test timed out ({exc}) and was stopped; the run goes "
            "on. Likely cause: a compile that explodes (a huge unroll, e.g. unroll a whole "
            "axis of 512) or a kernel that never ends (pytest -v shows where it was). "
            "Raise the limit with pytest --timeout=<seconds> if it is only slow.",
            keep_traceback=True,
        )
    if isinstance(exc, KataFailure):
        message = str(exc)
        if not message.startswith(kata.id):  # "f(): ..." reads "kata › f(): ..."
            joint = " ›" if re.match(r"\w+\(\):", message) else ":"
            message = f"{kata.id}{joint} {message}"
        original = "\n".join(getattr(exc, "__notes__", []))
        if exc.__cause__ is not None:
            cause = "".join(traceback.format_exception(exc.__cause__)).rstrip()
            original += f"\n\nThe original error, from XTC:\n{cause}"
        return Told(message, original.strip("\n"))
    if isinstance(exc, OSError) and "cannot open shared object" in str(exc):
        # XTC's message does not say what the learner did
        return Told(
            f"{kata.id}: the compiled module has no shared library to load: XTC writes one "
            "only with get_compiler(dump_file=..., shared_lib=True) (without it, MLIR leaves "
            f"no .so)\n  {_where(kata)}",
            keep_traceback=True,
        )
    function = learner_function(kata, tb, exc)
    if function is None:
        return _test_failed(exc)
    file, line, raiser, code = (frames(tb, exc) or [("", 0, None, "")])[-1]
    if isinstance(exc, NotImplementedError) and raiser == function:
        return Told(not_implemented(kata, function))
    at = learner_line(kata, tb, exc)
    parts = Path(file).parts
    if "site-packages" in parts and any(p in ("xtc", "tvm", "mlir") for p in parts):
        # an error without a message (a bare `assert` in XTC) is told by its line
        where = "/".join(parts[-3:])
        said = str(exc) or f"(no message) `{code.strip()}` in {raiser}(), {where}:{line}"
        return Told(
            f"{kata.id} › {function}(): XTC rejected it with {type(exc).__name__}: {said}\n"
            + (
                f"  Fix this call in {function}(): {at}"
                if at
                else f"  Fix the call in {function}() that pytest -v's traceback points at."
            ),
            keep_traceback=True,
        )
    return Told(
        f"{kata.id} › {function}() raised {type(exc).__name__}: {exc}"
        + (f"\n  at {at}" if at else ""),
        keep_traceback=True,
    )


def _test_failed(exc: BaseException) -> Told | None:
    """A kata test's own failure (a plain assert, pytest.raises' "DID NOT RAISE") with
    notes (hypothesis's falsifying example, which holds the harness's objects): its message
    alone, the notes in pytest's traceback under pytest -v. pytest's one-line crash
    message, which a learner's run prints otherwise, carries the notes, and two tests
    failing for one cause would differ by their examples' test names."""
    if not getattr(exc, "__notes__", None) or not str(exc):
        return None
    message = str(exc) if isinstance(exc, AssertionError) else f"{type(exc).__name__}: {exc}"
    return Told(message, keep_traceback=True)
