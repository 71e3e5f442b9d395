"""`xtc-katas show`: the loop nest, the transformed IR and the assembly of your schedule.

The lessons ask you to read what XTC generated: whether the inner loop holds one vector
FMA per accumulator, whether the tile of C stays in registers. This builds the schedule
of any task whose kind has a probe as its tests build it, compiles it with XTC's print
flag for the view asked, and prints it; in assembly every vector FMA is marked and
counted per register width. Nothing runs: only compiles, in a temporary directory.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import io
import re
import sys
from typing import Any

from xtc_katas.checks.kinds import (
    EXPLORED,
    EXPLORED_SEED,
    STRATEGY_SEED,
    kind_of,
    tasks_where,
)
from xtc_katas.checks.learner import Learner
from xtc_katas.checks.task_under_test import TaskUnderTest
from xtc_katas.cli.search_view import scratch
from xtc_katas.kata.failures import not_implemented
from xtc_katas.kata.manifest import Kata, find
from xtc_katas.measure import machine, machine_description
from xtc_katas.measure.backends import BACKENDS, KataBackend
from xtc_katas.measure.workdir import Workdir

VIEWS = {"nest": None, "ir": "print_transformed_ir", "asm": "print_assembly"}


def render(impl: Any, scheduler: Any, view: str, workdir: Workdir) -> str:
    """The loop nest, or what XTC prints while compiling with the view's flag."""
    if view == "nest":
        return scheduler.get_loop_nest().root_node.pretty_print()
    out, err = io.StringIO(), io.StringIO()
    dump_file = workdir.dump_file("show")
    compiler = impl.get_compiler(dump_file=dump_file, shared_lib=True, **{VIEWS[view]: True})
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        compiler.compile(scheduler.schedule())  # MLIR prints to stderr, TVM to stdout
    text = out.getvalue() + err.getvalue()
    if view == "asm" and "__kmpc_fork_call" in text:
        text += outlined_bodies(f"{dump_file}.so")
    return mark_fmas(text) if view == "asm" else text


def outlined_bodies(library: str) -> str:
    """The code of each OpenMP-outlined function (`<kernel>..omp_par`) in `library`.

    MLIR outlines a parallel loop into a function of its own: XTC's listing shows only
    the kernel, which calls `__kmpc_fork_call`, and the loop's code, where its vector
    (or scalar) FMAs are, is in the outlined function."""
    import subprocess

    from xtc.utils.host_tools import disassemble

    try:
        table = subprocess.run(
            ["objdump", "-t", library], capture_output=True, text=True, check=True
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return ""
    names = sorted({line.split()[-1] for line in table.splitlines() if "omp_par" in line})
    return "".join(
        f"\n\n<{name}>: the parallel loop's body, outlined by OpenMP\n"
        + disassemble(library, function=name)
        for name in names
    )


def mark_fmas(listing: str, assembly: dict[str, str] | None = None) -> str:
    """Mark each vector FMA and count them by register width, for the eye to find, in this
    machine's assembly (or `assembly`'s: machine_description.ASSEMBLY)."""
    assembly = assembly or machine_description.assembly()
    fma, scalar_fma = re.compile(assembly["fma"]), re.compile(assembly["scalar"])
    vector_register = re.compile(assembly["register"])
    counts: dict[str, int] = {}
    lines = []
    for line in listing.splitlines():
        registers = vector_register.findall(line)
        if fma.search(line) and registers:
            width = max(registers)  # the widest register names the width
            counts[width] = counts.get(width, 0) + 1
            line = f"{line}    <== vector FMA ({width})"
        lines.append(line)
    shown = ", ".join(f"{n} on {w}" for w, n in sorted(counts.items(), reverse=True))
    scalar = sum(bool(scalar_fma.search(line)) for line in lines)
    lines.append(
        f"\n{sum(counts.values())} vector FMA instructions in this listing: {shown or '-'}"
        + (f"; {scalar} scalar FMAs (one float each: {assembly['example']})" if scalar else "")
    )
    return "\n".join(lines)


def main(args: argparse.Namespace) -> int:
    kata: Kata = args.kata
    machine.emulate_cpu_info()
    shown = tasks_where(kata, "probe")
    names = ", ".join(t.function for t in shown)
    if not shown:
        raise LookupError(f"{kata.id} has no schedule to show: its tasks build none")
    if args.function is None and len(shown) > 1:
        raise LookupError(f"{kata.id} has several schedules: name one of {names}")
    entry = shown[0] if args.function is None else kata.task(args.function)
    if entry not in shown:
        raise LookupError(f"{kata.id} has no schedule named {args.function!r}; try one of: {names}")
    if (args.reference or args.diff) and not unlocked(kata, entry.function, args.spoil):
        return 1
    kind = kind_of(entry)
    option = getattr(args, kind.option) if kind.option else None
    views = [v for v in VIEWS if getattr(args, v)] or ["nest"]
    sides = ["yours", "reference"] if args.diff else ["reference" if args.reference else "yours"]
    with scratch("show") as workdir:
        for name in args.backend or BACKENDS:
            backend = KataBackend(name)
            for view in views:
                texts = {}
                for side in sides:
                    try:
                        with Learner(kata, solution=side == "reference") as learner:
                            task = TaskUnderTest(kata, entry, learner, backend, workdir)
                            (impl, scheduler), _ = task.schedules(option)
                    except NotImplementedError:
                        print(not_implemented(kata, entry.function))
                        return 1
                    texts[side] = render(impl, scheduler, view, workdir)
                title = f"{kata.id} {entry.function} on {name}, {task.problem.label}: {view}"
                print(f"===== {title} ({machine.describe()})")
                if args.diff:
                    yours, reference = (texts[s].splitlines() for s in sides)
                    diff = difflib.unified_diff(yours, reference, "yours", "reference", lineterm="")
                    print("\n".join(diff) or "(the same)")
                else:
                    print(texts[sides[0]])
    return 0


def unlocked(kata: Kata, function: str, spoil: bool) -> bool:
    """The reference's schedule is the task's answer: shown once the task passed its tests
    (as `xtc-katas solution` is once the kata passes), or with --spoil, after a warning."""
    from xtc_katas.kata import progress

    if progress.task_states(kata, progress.read()).get(function) == "passed":
        return True
    if not spoil:
        print(
            f"xtc-katas: {kata.id} › {function}() has not passed its tests yet: the "
            f"reference's schedule (--reference, --diff) is its answer, shown once it passes: "
            f"xtc-katas run {kata.number}. Stuck? xtc-katas hint {kata.number} {function}. To "
            "look anyway: add --spoil",
            file=sys.stderr,
        )
        return False
    print(
        f"warning: {kata.id} › {function}() has not passed yet. Reading the answer first "
        "skips the part where you learn it; try the next hint before reading on.\n",
        file=sys.stderr,
    )
    return True


def add_parser(sub: Any) -> None:
    show = sub.add_parser(
        "show", help="the loop nest, IR or assembly of your schedule (a kata that builds one)"
    )
    show.add_argument("kata", type=find, help="a kata with schedules (xtc-katas status lists them)")
    show.add_argument("function", nargs="?", help="the task's function, where a kata has several")
    show.add_argument("--nest", action="store_true", help="the loop nest (the default)")
    show.add_argument("--ir", action="store_true", help="the transformed IR")
    show.add_argument("--asm", action="store_true", help="the assembly, vector FMAs marked")
    side = show.add_mutually_exclusive_group()
    side.add_argument(
        "--reference", action="store_true", help="the reference's instead, once the task passes"
    )
    side.add_argument(
        "--diff", action="store_true", help="a diff of yours and the reference, once it passes"
    )
    show.add_argument(
        "--spoil", action="store_true", help="--reference or --diff before a pass, after a warning"
    )
    show.add_argument("--backend", action="append", choices=BACKENDS)
    show.add_argument("--candidate", help="kata 06: the candidate's name (default: the first)")
    show.add_argument(
        "--sample",
        type=int,
        help=f"a strategy's sample N of seed {EXPLORED_SEED}, as kata 07 explores them (0 to "
        f"{EXPLORED - 1}; default: the sample its speed test races, the first of seed "
        f"{STRATEGY_SEED})",
    )
    show.add_argument("--threads", type=int, default=1, help="kata 08: the thread count")
    show.set_defaults(func=main)
