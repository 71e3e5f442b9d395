"""Kata 08, reference solution: a 1024x1024x1024 float32 matmul vs numpy.

`schedule_large(sch, threads)` receives a fresh scheduler of the 1024^3 problem (loops
i, j, k, node "C") and applies your schedule for `threads` threads: imperative
primitives (kata 04), a descript spec (kata 05):

    from xtc.schedules.descript import descript_scheduler
    descript_scheduler(scheduler=sch, node_name="C", abstract_dims=["i", "j", "k"], spec=...)

or a strategy's `generate(sch, sample)` with a sample you chose (kata 07). The tests run
it on both backends, with 1 and 2 threads, side by side with numpy on as many threads.

Read README.md in this folder first (start with TVM: packing works on TVM only in XTC
0.3.2), then run: pytest katas/08_large_matmul --backend tvm

This reference picks its micro-kernel and cache blocks per machine, the way ATLAS and
OpenBLAS pick a kernel per CPU: the best shape differs from one CPU to the next (8x32
on an AMD EPYC, 4x64 on an Intel Xeon, both AVX-512; 4x16 on AVX2), so it measures a
few candidates that fit this CPU's registers, once, and keeps the fastest in a cache file.
"""

import contextlib
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from tqdm import tqdm
from xtc.schedules.descript import descript_scheduler
from xtc.utils.cpu import cpu_info

CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "xtc-katas"
#: Cache blocks (rows of A per block, depth of k per block): the packed panels of A
#: (rows x depth) and of B (depth x the micro-kernel's width) stay in L1/L2 while the
#: micro-kernel sweeps them. Which pair wins depends on the cache sizes: measured.
BLOCKS = ((32, 512), (32, 256), (64, 256))
#: 2 FMA units x 4 cycles of latency: at least 8 independent accumulators keep both busy.
MIN_ACCUMULATORS = 8


def micro_kernels(lanes: int, registers: int) -> list[tuple[int, int]]:
    """(rows, vectors) of C held in registers: rows x vectors accumulators, at least
    MIN_ACCUMULATORS of them, plus one register per vector of B and one for A's
    broadcast, within the machine's vector registers."""
    return [
        (rows, vectors)
        for rows in (2, 4, 8)
        for vectors in (1, 2, 4)
        if rows * vectors >= MIN_ACCUMULATORS
        and rows * vectors + vectors + 1 <= registers
        and 1024 % (vectors * lanes) == 0
    ]


def spec_for(rows: int, width: int, block_i: int, block_k: int, parallel: bool) -> dict:
    """GOTO's loop nest: k blocks (B packed), i blocks (A packed), then the micro-kernel."""
    return {
        "k": {"pack": (1, None, True)},  # B, per k block (TVM; MLIR 0.3.2 ignores "pack")
        "i": {"pack": (0, None, True), **({"parallelize": True} if parallel else {})},
        "j": {},
        f"i#{block_i}": {},
        f"k#{block_k}": {},
        "k#2": {"unroll": True},
        f"i#{rows}": {"unroll": True},
        f"j#{width}": {"vectorize": True},
    }


def candidates(lanes: int) -> dict[str, dict]:
    """The single-thread specs worth measuring with `lanes` float32 lanes, by name."""
    registers = 32 if lanes >= 16 else 16  # zmm0-31 with AVX-512, or ymm0-15
    return {
        f"{rows}x{vectors * lanes} i#{block_i} k#{block_k}": spec_for(
            rows, vectors * lanes, block_i, block_k, parallel=False
        )
        for rows, vectors in micro_kernels(lanes, registers)
        for block_i, block_k in BLOCKS
    }


def with_threads(spec: dict, name: str) -> dict[str, dict]:
    """The single-thread winner, with and without a parallel outer loop: a parallel loop
    pays on TVM; on MLIR 0.3.2 it made the kernel slower (measured in the lesson)."""
    return {name: spec, f"{name} parallel": {**spec, "i": {**spec["i"], "parallelize": True}}}


def fastest(sch: Any, specs: dict[str, dict], threads: int) -> str:
    """Compile every spec, time them side by side, return the fastest one's name.

    The harness's helpers do the plumbing: a fresh dump_file per compile (Workdir), and
    the side-by-side timing in a child process on exactly `threads` threads
    (time_side_by_side): a parallel kernel starts its runtime's thread pool, and a pool
    started in this process would not survive the harness's later fork()s.
    """
    from xtc_katas.kata.problems import CHALLENGE
    from xtc_katas.measure.timing import time_side_by_side
    from xtc_katas.measure.workdir import Workdir

    backend = sch.backend
    modules = {}
    print(
        f"08_large_matmul reference: choosing its kernel for this CPU, once per backend and "
        f"thread count: {len(specs)} candidates compiled, then timed side by side on "
        f"{threads} thread(s) (the choice is kept in {CACHE / 'kata08-reference.json'})",
        file=sys.stderr,
        flush=True,
    )
    with (
        tempfile.TemporaryDirectory(prefix="xtc-kata08-tune-") as scratch,
        tqdm(total=len(specs) + 1, desc="  compiled", unit="kernel", file=sys.stderr) as shown,
    ):
        workdir = Workdir(Path(scratch))
        for name, spec in specs.items():
            impl = type(backend)(backend.graph)
            candidate = impl.get_scheduler()
            descript_scheduler(
                scheduler=candidate, node_name="C", abstract_dims=["i", "j", "k"], spec=spec
            )
            modules[name] = workdir.compile(impl, candidate.schedule(), stem="tune")
            shown.update()
        shown.set_description("  timing them side by side")
        best = time_side_by_side(modules, CHALLENGE, rounds=3, threads=threads).best
        shown.update()
        winner = min(best, key=best.__getitem__)
        shown.set_description(f"  chose {winner}")
    return winner


def choice(sch: Any, threads: int) -> dict:
    """The fastest spec for this CPU, backend and thread count, measured once and cached.

    One thread first: every micro-kernel that fits the registers, in every cache block.
    For more threads, the one-thread winner with and without the parallel loop.
    """
    from cpuinfo import get_cpu_info

    cpu = get_cpu_info()
    backend = type(sch.backend).__module__.split(".")[2]  # "mlir" or "tvm"
    lanes = cpu_info()["vsize"]["float32"]
    machine = (
        f"{cpu.get('brand_raw', '?')} (family {cpu.get('family')} model {cpu.get('model')}), "
        f"{lanes} float32 lanes"
    )
    path = CACHE / "kata08-reference.json"
    try:
        known = json.loads(path.read_text())
    except (OSError, ValueError):  # no cache yet, or a damaged one: measure again
        known = {}

    def measured(threads: int) -> tuple[str, dict]:
        if threads == 1:
            specs = candidates(lanes)
        else:
            name, spec = measured(1)
            specs = with_threads(spec, name)
        key = f"{machine} | {backend} | {threads} thread(s)"
        if key not in known:
            known[key] = fastest(sch, specs, threads)
            with contextlib.suppress(OSError):  # a read-only home: tune again next time
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(json.dumps(known, indent=1))
        return known[key], specs[known[key]]

    return measured(threads)[1]


def schedule_large(sch: Any, threads: int) -> None:
    """Schedule the 1024^3 matmul for `threads` threads (parallelize only when threads > 1)."""
    descript_scheduler(
        scheduler=sch, node_name="C", abstract_dims=["i", "j", "k"], spec=choice(sch, threads)
    )
