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
OpenBLAS pick a kernel per CPU: the best shape differs from one CPU to the next (4x64 or
8x32 on an AMD EPYC family 26, 6x64 with a split of i on Intel Xeon family 6 models 167
and 207, all AVX-512; 4x16 or 6x16 on AVX2; on NEON, 32 registers of 4 lanes, none
measured: 4x16 holds 16 accumulators in 21), so it measures the candidates that fit this
CPU's registers, once, and keeps the fastest in a cache file.
"""

import contextlib
import json
import os
import sys
import tempfile
import zlib
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


#: Rows, columns and depth of the challenge.
SIZE = 1024


def micro_kernels(lanes: int, registers: int, rows: tuple[int, ...] = (2, 4, 8)) -> list:
    """(rows, vectors) of C held in registers: rows x vectors accumulators, at least
    MIN_ACCUMULATORS of them, plus one register per vector of B and one for A's
    broadcast, within the machine's vector registers."""
    return [
        (height, vectors)
        for height in rows
        for vectors in (1, 2, 4)
        if height * vectors >= MIN_ACCUMULATORS
        and height * vectors + vectors + 1 <= registers
        and SIZE % (vectors * lanes) == 0
    ]


#: Micro-kernels whose rows do not divide SIZE, for more accumulators than a power of two
#: fits: BLIS's AVX2 sgemm kernel is 6x16 (12 accumulators, 15 of the 16 ymm registers),
#: where 4x16 has 8, exactly the 2 FMA units x 4 cycles of latency, with no slack.
SPLIT_ROWS = (6, 12)
#: The rows left below the last whole block of a split kernel run a 4-row kernel.
TAIL_ROWS = 4


#: GOTO's outermost loop: blocks of this many columns of C (BLIS's nc), so that the packed
#: panels of B a block of rows reads stay in L2 (a 256 x 512 panel is 512 KiB).
BLOCK_J = 512
#: Steps of k unrolled in the micro-kernel of the first candidates.
UNROLL_K = 2
#: GOTO's candidates, (depth of k per block, steps of k unrolled): (256, 8) won on an Intel
#: Xeon family 6 model 167 (AVX-512, and as AVX2: 8 gained 4-8% over 2); (512, 4) on an AMD
#: EPYC family 25 model 1 (Zen 3, AVX2, 512 KiB L2: 0.91x numpy, against 0.82-0.86 for the
#: best of the first candidates; docs/xtc-0.3.2-field-notes.md, Zen 3).
GOTO_BLOCKS = ((256, 8), (512, 4))


def spec_for(
    rows: int,
    width: int,
    block_i: int,
    block_k: int,
    block_j: int | None = None,
    unroll_k: int = UNROLL_K,
) -> dict:
    """GOTO's loop nest: k blocks (B packed), i blocks (A packed), then the micro-kernel;
    with `block_j`, blocks of columns outermost."""
    return {
        **({"j": {}} if block_j else {}),
        "k": {"pack": (1, None, True)},  # B, per k block (TVM; MLIR 0.3.2 ignores "pack")
        "i": {"pack": (0, None, True)},  # A, per i block
        **({f"j#{block_j}": {}} if block_j else {"j": {}}),
        f"i#{block_i}": {},
        f"k#{block_k}": {},
        f"k#{unroll_k}": {"unroll": True},
        f"i#{rows}": {"unroll": True},
        f"j#{width}": {"vectorize": True},
    }


def split_spec(rows: int, width: int, block_i: int, block_k: int, unroll_k: int) -> dict:
    """GOTO's loop nest for a `rows` x `width` kernel whose rows do not divide SIZE: `i`
    split in two (descript's `i[start:end]`), the whole blocks of `block_i` rows with this
    kernel, the rest with a TAIL_ROWS-row one, each part a loop nest of its own.

    Nothing is packed: in a split, XTC 0.3.2 on TVM packs the whole of A and of B at every
    step of the loop it packs at (its scheduled TIR copies 1024 x 1024 floats there), 2-3x
    slower than no packing at all (68-91 ms against 29 ms, Intel Xeon family 6 model 207,
    as AVX2)."""
    whole = SIZE // block_i * block_i

    def part(height: int, block: int, kernel: int) -> dict:
        return {
            "j": {},
            "k": {},
            **({f"i#{height}": {}} if block < height else {}),
            f"j#{BLOCK_J}": {},
            f"i#{block}": {},
            f"k#{block_k}": {},
            f"k#{unroll_k}": {"unroll": True},
            f"i#{kernel}": {"unroll": True},
            f"j#{width}": {"vectorize": True},
        }

    rest = SIZE - whole
    return {
        f"i[0:{whole}]": part(whole, block_i, rows),
        f"i[{whole}:]": part(rest, min(rest, 4 * TAIL_ROWS), TAIL_ROWS),
    }


def candidates(lanes: int) -> dict[str, dict]:
    """The single-thread specs worth measuring with `lanes` float32 lanes, by name: every
    micro-kernel that fits in every cache block; each micro-kernel in GOTO's order
    (blocks of BLOCK_J columns outermost) in each of GOTO_BLOCKS; and the split kernels
    that hold more accumulators than any of those, in two depths of k."""
    registers = 16 if lanes == 8 else 32  # ymm0-15 (AVX2), zmm0-31 (AVX-512), v0-v31 (NEON)
    kernels = micro_kernels(lanes, registers)
    plain = {
        f"{rows}x{vectors * lanes} i#{block_i} k#{block_k}": spec_for(
            rows, vectors * lanes, block_i, block_k
        )
        for rows, vectors in kernels
        for block_i, block_k in BLOCKS
    }
    goto = {
        f"{rows}x{vectors * lanes} j#{BLOCK_J} i#32 k#{block_k} k#{unroll_k}": spec_for(
            rows, vectors * lanes, 32, block_k, block_j=BLOCK_J, unroll_k=unroll_k
        )
        for rows, vectors in kernels
        for block_k, unroll_k in GOTO_BLOCKS
    }
    most = max(rows * vectors for rows, vectors in kernels)
    split = {
        f"{rows}x{vectors * lanes} split i#{8 * rows} k#{block_k} k#4": split_spec(
            rows, vectors * lanes, 8 * rows, block_k, 4
        )
        for rows, vectors in micro_kernels(lanes, registers, SPLIT_ROWS)
        if rows * vectors > most  # more accumulators than a kernel without a split
        for block_k in (256, 128)
    }
    return {**plain, **goto, **split}


#: Narrower blocks of columns tried at more than one thread: with 2 threads, each runs
#: half the blocks of j, and 4 blocks of 256 columns (or 8 of 128) ran the 6x16 split
#: kernel 14.0-14.5 ms where 2 blocks of 512 ran it in 14.9-15.1 (best of 15 rounds, TVM,
#: Intel Xeon family 6 model 207 as AVX2; numpy 13.5-14.5 ms).
PARALLEL_BLOCKS_J = (256, 128)


def with_threads(spec: dict, name: str) -> dict[str, dict]:
    """The single-thread winner, with and without a parallel loop over the output: GOTO's
    blocks of j when they come first, else the blocks of i (never k, the reduction, which
    comes first otherwise), and, where it has blocks of BLOCK_J columns, the same parallel
    kernel with PARALLEL_BLOCKS_J. A parallel loop pays on TVM; on MLIR 0.3.2 it made the
    kernel slower (measured in the lesson)."""
    if all("[" in key for key in spec):  # a split: each part's blocks of j
        parallel = {key: _parallel(part) for key, part in spec.items()}
    else:
        parallel = _parallel(spec)
    found = {name: spec, f"{name} parallel": parallel}
    for block_j in PARALLEL_BLOCKS_J:
        narrower = _renamed(parallel, block_j)
        if narrower != parallel:  # it has blocks of BLOCK_J columns
            found[f"{name} parallel j#{block_j}"] = narrower
    return found


def _renamed(spec: dict, block_j: int) -> dict:
    """The spec with its blocks of BLOCK_J columns (in every part of a split) of block_j."""
    key = f"j#{BLOCK_J}"
    return {
        (f"j#{block_j}" if name == key else name): (
            _renamed(value, block_j) if "[" in name else value
        )
        for name, value in spec.items()
    }


def _parallel(spec: dict) -> dict:
    """A loop nest with its outermost loop of the output parallel (j, else i)."""
    parallel = {key: dict(value) for key, value in spec.items()}
    parallel["j" if next(iter(spec)) == "j" else "i"]["parallelize"] = True
    return parallel


def fastest(sch: Any, specs: dict[str, dict], threads: int) -> str:
    """Compile every spec, time them side by side, return the fastest one's name.

    The harness's helpers do the plumbing: a fresh dump_file per compile (Workdir), and
    the side-by-side timing in a child process on exactly `threads` threads
    (time_side_by_side): a parallel kernel starts its runtime's thread pool, and a pool
    started in this process would not survive the harness's later fork()s.
    """
    from xtc_katas.kata.problems import CHALLENGE
    from xtc_katas.measure.timing import FEW_LONG_ROUNDS, time_side_by_side
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
        best = time_side_by_side(
            modules, CHALLENGE, rounds=3, threads=threads, **FEW_LONG_ROUNDS
        ).best
        shown.update()
        winner = min(best, key=best.__getitem__)
        shown.set_description(f"  chose {winner}")
    return winner


def choice(sch: Any, threads: int) -> dict:
    """The fastest spec for this CPU, backend and thread count, measured once and cached.

    One thread first: every micro-kernel that fits the registers, in every cache block.
    For more threads, the one-thread winner with and without the parallel loop, and
    parallel with narrower blocks of columns (with_threads).
    """
    from cpuinfo import get_cpu_info

    from xtc_katas.measure.machine_description import emulated_by_qemu

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
        # the candidates are part of the key: a new list is measured again
        listed = zlib.crc32(json.dumps(specs, sort_keys=True, default=str).encode())
        key = f"{machine} | {backend} | {threads} thread(s) | candidates {listed:08x}"
        if key not in known and emulated_by_qemu():
            # QEMU's times measure QEMU, and timing every candidate there takes hours:
            # the first, unmeasured, and with threads its parallel loop
            name = next(iter(specs)) if threads == 1 else f"{name} parallel"
            return name, specs[name]
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
