"""`xtc-katas`: the learner's loop on top of pytest.

status (the default), run, watch, hint, solution, reset, show, explore, report, notebook:
each with --help. Progress is never hand-kept: `run` (and `watch`, the notebook) runs a
kata's tests, which record their results in pytest's cache; `status` reads them back,
running nothing, and counts a result recorded against an older version of the file as
not run.
"""

from __future__ import annotations

import argparse
import importlib
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from xtc_katas import ROOT
from xtc_katas.grade import cluster_certs, grade_command  # before main() leaves the launch dir
from xtc_katas.kata import progress, stubs
from xtc_katas.kata.manifest import Kata, Task, find, katas
from xtc_katas.kata.progress import BestFigure, KataStatus, kata_status
from xtc_katas.kata.run_lock import RunBusy, run_lock
from xtc_katas.measure import machine
from xtc_katas.measure.backends import BACKENDS
from xtc_katas.measure.timing import ABOVE_PEAK, format_percent

#: The exit code when another run holds the repository's lock: EX_TEMPFAIL (try again
#: later), distinct from pytest's own codes 0-5 that `run` passes through.
BUSY_EXIT = 75


def pytest_kata(kata: Kata, extra: Sequence[str] = (), quiet: bool = True) -> int:
    """Run one kata's tests in a fresh process, recording results in the cache, under the
    repository's run lock (RunBusy if another run, e.g. the notebook's, holds it): two
    runs at once would race each other's timings."""
    args = [sys.executable, "-m", "pytest", f"katas/{kata.id}", *extra]
    with run_lock(f"xtc-katas on {kata.id}"):
        if quiet:
            args += ["-q", "--no-header", "-p", "no:warnings"]
        return subprocess.run(args, cwd=ROOT, capture_output=quiet, text=True).returncode


def collect_statuses() -> list[KataStatus]:
    """Every kata's status, read from the last recorded results: nothing runs (`run` does)."""
    results = progress.read()
    return [kata_status(kata, results) for kata in katas()]


def _best(best: BestFigure | None) -> str:
    """The best passed figure, with its task: `04 schedule_parallel: 80.1x naive, 35%`."""
    if best is None:
        return "-"
    over = {"unfused": "its unfused self", "naive": "naive", "numpy": "numpy"}.get(
        best.over, f"over {best.over}"
    )
    shown = best.percent_of_peak
    percent = f", {format_percent(shown, 0, '*')} of peak" if shown else ""
    return f"{best.task} ({best.backend}): {best.speedup:.3g}x {over}{percent}"


def render_table(statuses: list[KataStatus]) -> str:
    rows = [("kata", "state", "tasks", "best figure (its task, backend)", "title")] + [
        (s.kata.id, s.state, f"{s.tasks_passed}/{len(s.kata.tasks)}", _best(s.best), s.kata.title)
        for s in statuses
    ]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    lines = [
        "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=False)) + "  " + r[-1] for r in rows
    ]
    lines.insert(1, "-" * len(lines[0]))
    if any(s.best and (s.best.percent_of_peak or 0) > 100 for s in statuses):
        lines.append(f"(*) {ABOVE_PEAK}")
    done = sum(s.state == "passing" for s in statuses)
    lines.append(f"\n{done} of {len(statuses)} katas passing.")
    return "\n".join(lines)


def render_next_step(statuses: list[KataStatus]) -> str:
    current = next((s for s in statuses if s.state != "passing"), None)
    if current is None:
        return "Every kata passes. Try `pytest katas --solutions` to compare with the reference."
    kata = current.kata
    lines = [f"Next: {kata.id} — {kata.title}", f"  lesson: katas/{kata.id}/README.md"]
    failure = current.first_failure
    if failure:
        lines.append(f"  first failure: {failure.message or 'see pytest output'}")
    elif current.state in ("not run", "partly run"):
        lines.append(f"  {current.state}: its tests have no results for your current file yet")
    task = _hint_task(kata, None)
    _, hint = progress.next_hint(kata, task)
    lines.append(f"  hint ({task.function}): {hint}")
    lines.append(f"  more: xtc-katas hint {kata.number} {task.function}")
    lines.append(f"  run:  xtc-katas run {kata.number}    (or: pytest katas/{kata.id})")
    return "\n".join(lines)


def cmd_status(args: argparse.Namespace) -> int:
    statuses = collect_statuses()
    print(render_table(statuses), render_next_step(statuses), sep="\n\n")
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    kata = args.kata or progress.current_kata()
    extra = [f"--backend={b}" for b in args.backend or []]
    code = pytest_kata(kata, extra + list(args.pytest_args), quiet=False)
    status = kata_status(kata, progress.read())
    print(f"\n{kata.id}: {status.state}, {status.tasks_passed}/{len(kata.tasks)} tasks passed")
    return code


def _hint_task(kata: Kata, function: str | None) -> Task:
    """The task `function` names, else the one the learner is stuck on: the first
    failing one, else the first not passed yet, else the first."""
    if function:
        task = kata.task(function)
        if task is None:
            names = ", ".join(t.function for t in kata.tasks)
            raise SystemExit(f"xtc-katas: {kata.id} has no function {function!r}; it has {names}")
        return task
    status = kata_status(kata, progress.read())
    failing = status.first_failure.tasks if status.first_failure else ()
    results = progress.kata_results(kata, progress.read()).values()
    passed = {f for r in results if r.passed for f in r.tasks}
    return (
        next((t for t in kata.tasks if t.function in failing), None)
        or next((t for t in kata.tasks if t.function not in passed), None)
        or kata.tasks[0]
    )


def cmd_hint(args: argparse.Namespace) -> int:
    kata = args.kata or progress.current_kata()
    task = _hint_task(kata, args.function)
    index, text = progress.next_hint(kata, task, advance=True)
    print(f"{kata.id} › {task.function} hint {index + 1}/{len(task.hints)}: {text}")
    if index + 1 == len(task.hints):
        others = [t.function for t in kata.tasks if t is not task]
        print(
            "(that was this function's last hint; the next call starts over. The lesson: "
            f"katas/{kata.id}/README.md"
            + (f"; other functions: xtc-katas hint {kata.number} {others[0]}" if others else "")
            + ")"
        )
    return 0


def wait_for_change(folder: Path, manual: bool) -> bool:
    """Block until a .py file in `folder` is saved (True), or the learner quits (False).
    Where watching fails (no inotify, a network file system), Enter re-runs."""
    if not manual:
        try:
            from watchfiles import watch

            for _ in watch(
                folder, watch_filter=lambda _c, path: path.endswith(".py"), raise_interrupt=False
            ):
                return True
            return False  # Ctrl-C
        except (OSError, RuntimeError) as exc:
            print(f"watching {folder} failed ({exc}): falling back to Enter", flush=True)
    print("press Enter to re-run the tests, q then Enter to quit", flush=True)
    line = sys.stdin.readline()
    return bool(line) and line.strip().lower() != "q"


def cmd_watch(args: argparse.Namespace) -> int:
    kata = args.kata or progress.current_kata()
    extra = [f"--backend={b}" for b in args.backend or []]
    runs = 0
    while True:
        print(f"running the tests of {kata.id} ...", flush=True)
        try:
            pytest_kata(kata, extra)
        except RunBusy as busy:  # never quit for it: try again at the next save
            print(
                f"another run is in progress ({busy.who}): not run now; the tests run when you "
                f"next save. Watching katas/{kata.id}/ (Ctrl-C to stop)",
                flush=True,
            )
        else:
            runs += 1
            status = kata_status(kata, progress.read())
            passed = f"{status.tasks_passed}/{len(kata.tasks)} tasks passed"
            print(f"[{kata.id}] {status.state}: {passed}", flush=True)
            if status.first_failure and status.state != "passing":
                print(f"  {status.first_failure.message or 'see: xtc-katas run'}", flush=True)
            if status.state == "passing" and not args.kata:
                following = next((k for k in katas() if k.number > kata.number), None)
                if following is None:
                    print("every kata passes: well done", flush=True)
                    return 0
                print(f"{kata.id} passes: on to {following.id} (katas/{following.id}/README.md)")
                kata = following
                continue
            if args.max_runs and runs >= args.max_runs:
                return 0 if status.state == "passing" else 1
            print(f"watching katas/{kata.id}/ for saved changes (Ctrl-C to stop)", flush=True)
        if not wait_for_change(kata.folder(), args.manual):
            return 0


def cmd_solution(args: argparse.Namespace) -> int:
    kata = args.kata
    status = kata_status(kata, progress.read())
    if status.state != "passing":
        if not args.force:
            print(
                f"xtc-katas: {kata.id} does not pass yet ({status.state}, "
                f"{status.tasks_passed}/{len(kata.tasks)} tasks). Its solution is shown once "
                f"its tests pass: xtc-katas run {kata.number}. Stuck? xtc-katas hint "
                f"{kata.number}. To look anyway: xtc-katas solution {kata.number} --force",
                file=sys.stderr,
            )
            return 1
        print(
            f"warning: {kata.id} does not pass yet. Reading the answer first skips the "
            "part where you learn it; try the next hint before reading on.\n",
            file=sys.stderr,
        )
    path = kata.solution_path()
    print(f"# {path.relative_to(ROOT)}\n")
    print(path.read_text())
    return 0


def original_stub(kata: Kata) -> str | None:
    """The stub as shipped: its newest committed version whose functions are all stubs
    (not HEAD, which may hold the learner's own commits)."""
    rel = kata.stub_path().relative_to(ROOT).as_posix()
    log = subprocess.run(
        ["git", "log", "--format=%H", "--", rel], cwd=ROOT, capture_output=True, text=True
    )
    if log.returncode != 0:
        return None
    for commit in log.stdout.split():
        shown = subprocess.run(
            ["git", "show", f"{commit}:{rel}"], cwd=ROOT, capture_output=True, text=True
        )
        if shown.returncode == 0 and stubs.source_is_untouched(kata, shown.stdout):
            return shown.stdout
    return None


def cmd_reset(args: argparse.Namespace) -> int:
    kata = args.kata
    stub = kata.stub_path()
    original = original_stub(kata)
    if original is None:
        print(
            f"xtc-katas: cannot find the original {stub.relative_to(ROOT)} in git history "
            "(reset needs the repository's .git)",
            file=sys.stderr,
        )
        return 1
    if stub.exists() and stub.read_text() == original:
        print(f"{stub.relative_to(ROOT)} is already the original stub: nothing to do")
        return 0
    backup = stubs.backup_stub(kata)
    stub.write_text(original)
    print(f"reset {stub.relative_to(ROOT)} to the original stub")
    if backup is not None:
        print(f"your version is saved as {backup.relative_to(ROOT)}")
    return 0


def command(name: str) -> Callable[[argparse.Namespace], int]:
    """The `main` of a heavier command's module (explore, report), imported only when it
    runs: `xtc-katas status` starts fast, and depends on the kata package alone."""
    return lambda args: importlib.import_module(f"xtc_katas.cli.{name}").main(args)


def cmd_notebook(args: argparse.Namespace) -> int:
    """The kata loop in a marimo app (xtc_katas/notebook/): served locally, URL printed."""
    from xtc_katas.notebook import server

    kata = args.kata or progress.current_kata()
    return server.main(kata, port=args.port, browser=not args.no_browser)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="xtc-katas",
        description="Learn performance engineering with XTC, kata by kata.",
        epilog=f"Exit codes: `run` passes pytest's through (0 all passed, 1 some failed, "
        f"2-5 pytest's own errors); 2 for an unknown kata; {BUSY_EXIT} (EX_TEMPFAIL) when "
        "another run of the tests (the notebook's, a `run`) holds the repository: one "
        "run at a time. `watch` then runs at the next save.",
    )
    parser.set_defaults(func=cmd_status)  # no subcommand: status
    backend = argparse.ArgumentParser(add_help=False)
    backend.add_argument("--backend", action="append", choices=BACKENDS)
    current = argparse.ArgumentParser(add_help=False)
    current.add_argument(
        "kata", nargs="?", type=find, help="number, name or id (default: the current kata)"
    )
    sub = parser.add_subparsers()

    def add(name: str, func: Callable[[argparse.Namespace], int], text: str, *parents: Any) -> Any:
        subcommand = sub.add_parser(name, help=text, parents=parents)
        subcommand.set_defaults(func=func)
        return subcommand

    add(
        "status",
        cmd_status,
        "progress table and the next step, from the last results (the default; `run` runs)",
    )
    run = add("run", cmd_run, "run one kata's tests (default: the current kata)", current, backend)
    run.add_argument("pytest_args", nargs=argparse.REMAINDER, help="passed on to pytest")
    hint = add("hint", cmd_hint, "the next hint of a kata's function, one per call", current)
    hint.add_argument(
        "function", nargs="?", help="the function the hint is for (default: the first failing one)"
    )
    watch = add(
        "watch",
        cmd_watch,
        "re-run the current kata's tests each time you save a file in it",
        backend,
    )
    watch.add_argument(
        "kata", nargs="?", type=find, help="stay on this kata (default: follow progress)"
    )
    watch.add_argument("--manual", action="store_true", help="no file watching: Enter re-runs")
    watch.add_argument("--max-runs", type=int, help="stop after this many runs")
    solution = add("solution", cmd_solution, "the reference solution, once the kata passes")
    solution.add_argument("kata", type=find, help="number, name or id")
    solution.add_argument(
        "--force", "--spoil", action="store_true", help="show it anyway, after a warning"
    )
    reset = add("reset", cmd_reset, "restore a kata's stub, keeping a backup of yours")
    reset.add_argument("kata", type=find, help="number, name or id")
    explore = add(
        "explore",
        command("explore"),
        "run your search (katas 06, 07: progress bar, top-10 table, plot; 12: "
        "convergence against random search)",
        backend,
    )
    explore.add_argument("kata", type=find, help="6, 7 or 12")
    explore.add_argument("--solutions", action="store_true", help="run the reference search")
    explore.add_argument("--num", type=int, default=30, help="kata 07: samples to draw")
    explore.add_argument("--seed", type=int, default=42, help="kata 07: the sampling seed")
    report = add(
        "report",
        command("report"),
        "measure your passing schedules against the references: JSON + PNG",
        backend,
    )
    report.add_argument("--out", type=Path, default=ROOT / ".xtc-katas" / "report")
    importlib.import_module("xtc_katas.cli.show").add_parser(sub)
    grade_command.add_parser(sub)
    cluster_certs.add_parser(sub)
    notebook = add(
        "notebook",
        cmd_notebook,
        "the kata loop in a marimo app in your browser: lesson, editor, run, charts",
        current,
    )
    notebook.add_argument("--port", type=int, help="local port (default: a free one)")
    notebook.add_argument("--no-browser", action="store_true", help="only print the URL")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    os.chdir(ROOT)
    machine.remember_cpu_reading()  # XTC reads the CPU at every TVM compile: 1.3 s each time
    try:
        args = build_parser().parse_args(argv)
        code = args.func(args)
        sys.stdout.flush()  # a closed pipe is found here, not at exit
        return code
    except BrokenPipeError:  # `xtc-katas ... | head`: the reader has what it wanted
        # Python's recipe (docs, signal module: "Note on SIGPIPE"): stdout to devnull so
        # the interpreter's own flush at exit does not raise again
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except LookupError as exc:
        print(f"xtc-katas: {exc}", file=sys.stderr)
        return 2
    except RunBusy as exc:
        print(f"xtc-katas: {exc}", file=sys.stderr)
        return BUSY_EXIT
