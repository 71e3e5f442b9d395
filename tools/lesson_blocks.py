"""Blocks of the lessons and docs written by the code, so that prose cannot drift from it.

A generated block sits between two comments, which a markdown viewer does not show:

    <!-- generated: rule -->
    ...
    <!-- /generated -->

`rule` is the bar rule with its numbers (xtc_katas/checks/speed_rule.py's RULE, PAYS,
CLEARS), `rule-quote` the rule's sentence alone, and `start KATA FUNCTION BACKEND` the loop
nest that task starts from: its problem's, unscheduled, as `xtc-katas show --nest` prints
it (never a reference's nest: issue 50 shows an answer only after a pass, and
`reference_nests` gives what tests/test_lesson_code.py keeps out of every lesson).
tests/test_lesson_code.py fails on a stale block and names its file;

    python -m tools.lesson_blocks          # rewrites every stale block
    python -m tools.lesson_blocks --check  # lists them, exit 1 if any
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from xtc_katas import ROOT

BLOCK = re.compile(
    r"^<!-- generated: (?P<what>[^>]*?) -->\n(?P<body>.*?)^<!-- /generated -->$", re.M | re.S
)
#: The float32 lanes the reference nests are built for: the lessons' machines are AVX-512.
LANES = 16


def texts() -> list[Path]:
    """Every markdown file a generated block may sit in."""
    return [
        ROOT / "README.md",
        *sorted(ROOT.glob("katas/*/README.md")),
        *sorted(ROOT.glob("docs/**/*.md")),
    ]


def rule() -> str:
    from xtc_katas.checks.speed_rule import ABOVE_PREVIOUS, CLEARS, HEADROOM, PAYS, RULE

    return (
        f"3. The bar rule: {RULE}\n"
        "4. So the raise counts only where the step **pays**, its reference beating the "
        f"previous step's by {PAYS:.2f}× ({ABOVE_PREVIOUS:g} / {HEADROOM:g}) or more in that "
        f"run. Where it does not, the bar is {HEADROOM:g} × the reference, the summary says "
        'the step did not pay ("in this run", or "on this machine" once several races '
        "agreed), and the loop-nest test checks the technique.\n"
        f"5. A solution as fast as the reference clears the bar by {CLEARS:.2f}× "
        f"(1 / {HEADROOM:g}) on any CPU, and by more where the cap sets the bar, so no "
        "number measured on another machine decides your verdict.\n"
    )


def rule_quote() -> str:
    from xtc_katas.checks.speed_rule import RULE

    return f"> {RULE}\n"


@contextmanager
def lanes(n: int = LANES) -> Iterator[None]:
    """xtc.utils.cpu.cpu_info() reports `n` float32 lanes inside (the strategies and the
    solutions read the SIMD width there)."""
    import xtc.utils.cpu as cpu

    native = cpu.cpu_info

    def cpu_info() -> dict:
        return {**native(), "vsize": {"float32": n, "float64": n // 2}}

    cpu.cpu_info = cpu_info
    try:
        yield
    finally:
        cpu.cpu_info = native


def start(kata_id: str, function: str, backend: str) -> str:
    """The nest a task starts from, fenced: its problem's, before any schedule."""
    from xtc_katas.checks.schedule import fresh_scheduler
    from xtc_katas.kata.manifest import find
    from xtc_katas.kata.problems import PROBLEMS
    from xtc_katas.measure.backends import KataBackend

    entry = find(kata_id).task(function)
    _, scheduler = fresh_scheduler(KataBackend(backend), PROBLEMS[entry.problem])
    text = scheduler.get_loop_nest().root_node.pretty_print()
    return f"```text\n{text.rstrip()}\n```\n"


#: References that pick their nest by timing candidates on the machine (not under
#: pytest-xdist): kata 08's challenge, whose lesson prints no nest.
TUNED = {("08_large_matmul", "schedule_large")}


def reference_nests(n: int = LANES) -> dict[str, str]:
    """The loop nest of every reference solution's task that builds one, on each backend,
    for `n` lanes, as `xtc-katas show N TASK --nest --reference` prints it: what a lesson's
    inline nest must never be (an answer is shown only after a pass, issue 50)."""
    from xtc_katas.checks.kinds import tasks_where
    from xtc_katas.checks.learner import Learner
    from xtc_katas.checks.schedule import fresh_scheduler
    from xtc_katas.checks.task_under_test import TaskUnderTest
    from xtc_katas.kata.manifest import katas
    from xtc_katas.measure.backends import BACKENDS, KataBackend

    nests = {}
    with lanes(n):
        for kata in katas():
            for entry in tasks_where(kata, "probe"):
                if (kata.id, entry.function) in TUNED:
                    continue
                for backend in BACKENDS:
                    with Learner(kata, solution=True) as learner:
                        task = TaskUnderTest(kata, entry, learner, KataBackend(backend), None)
                        (_, scheduler), _ = task.schedules()
                        text = scheduler.get_loop_nest().root_node.pretty_print()
                        _, naive = fresh_scheduler(KataBackend(backend), task.problem)
                    if text != naive.get_loop_nest().root_node.pretty_print():
                        # a reference that schedules nothing (a baseline) gives nothing away
                        nests[f"{kata.id} {entry.function} {backend}"] = text
    return nests


GENERATORS: dict[str, Callable[..., str]] = {"rule": rule, "rule-quote": rule_quote, "start": start}


def generate(what: str) -> str:
    name, *args = what.split()
    if name not in GENERATORS:
        raise LookupError(f"no generated block named {name!r}; there are {sorted(GENERATORS)}")
    return GENERATORS[name](*args)


def stale(path: Path, text: str | None = None) -> tuple[str, list[str]]:
    """The file's text with every block regenerated, and where a block was stale."""
    text = path.read_text() if text is None else text
    where: list[str] = []

    def fresh(found: re.Match) -> str:
        body = generate(found.group("what"))
        if body != found.group("body"):
            line = text.count("\n", 0, found.start()) + 1
            where.append(f"{path.relative_to(ROOT)}:{line}: {found.group('what')}")
        return f"<!-- generated: {found.group('what')} -->\n{body}<!-- /generated -->"

    return BLOCK.sub(fresh, text), where


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="list stale blocks, rewrite none")
    args = parser.parse_args(argv)
    found = []
    for path in texts():
        new, where = stale(path)
        found += where
        if where and not args.check:
            path.write_text(new)
    for each in found:
        print(("stale: " if args.check else "rewrote: ") + each)
    return 1 if found and args.check else 0


if __name__ == "__main__":
    sys.exit(main())
