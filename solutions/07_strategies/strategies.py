"""Kata 07, reference solution: let an XTC strategy define the search space, and search it.

A strategy (`xtc.search.strategies`) turns a graph into a space of schedules, each one a
*sample*: a short list of integers (tile sizes, unroll factors...). `strategy.sample(num,
seed)` draws distinct samples, `strategy.generate(scheduler, sample)` applies one to a
scheduler. The problem is the tutorial's 64x128x256 float32 matmul.

See your search run, with a progress bar, a top-10 table and a plot:
    xtc-katas explore 7 --backend mlir

Read README.md in this folder first, then run: pytest katas/07_strategies
"""

import contextlib
import io
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from xtc.search.strategies import Strategy_PPRPRPvr
from xtc.utils.cpu import cpu_info


def core_caches() -> tuple[int, int]:
    """One core's L1d and L2 in bytes, where docs/cpus.md says to read them: Linux's
    /sys/devices/system/cpu/cpu0/cache (lscpu's lines are totals over the cores), or an
    Apple Silicon performance core's sysctl. XTC's defaults (32 KiB, 1 MiB) elsewhere."""
    sizes = {"1": 32 * 1024, "2": 1024 * 1024}
    if sys.platform == "darwin":
        keys = ("hw.perflevel0.l1dcachesize", "hw.perflevel0.l2cachesize")
        done = subprocess.run(["sysctl", "-n", *keys], capture_output=True, text=True)
        read = [int(v) for v in done.stdout.split() if v.isdigit()]
        return (read[0], read[1]) if len(read) == 2 else (sizes["1"], sizes["2"])
    for index in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*"):
        level, kind, size = ((index / n).read_text().strip() for n in ("level", "type", "size"))
        if kind in ("Data", "Unified") and level in sizes and size.endswith("K"):
            sizes[level] = int(size[:-1]) * 1024
    return sizes["1"], sizes["2"]


def make_strategy(graph: Any) -> Any:
    """Choose a strategy class of xtc.search.strategies and its parameters for `graph`."""
    lanes = cpu_info()["vsize"]["float32"]
    registers = 16 if lanes == 8 else 32  # ymm0-15 (AVX2), zmm0-31 (AVX-512), v0-v31 (NEON)
    l1, l2 = core_caches()
    # Two levels of tiling with the inner tile vectorized, and samples filtered by this
    # machine's vector registers (accumulators only: the lesson's filter paragraph) and
    # caches (XTC's defaults are 32 registers, 32 KiB and 1 MiB): few wasted samples in 30.
    return Strategy_PPRPRPvr(
        graph, vec_size=lanes, max_unroll=64, vreg_num=registers, l1_size=l1, l2_size=l2
    )


def explore_strategy(
    graph: Any, Backend: Any, strategy: Any, num: int, seed: int, peak_fmas_per_s: float
) -> Iterator[tuple[int, int, list[int], float]]:
    """Draw `num` samples with `seed`; compile and measure each lazily.

    Yield (index, total, sample, percent_of_peak); an invalid sample yields 0.0 and the
    search goes on.
    """
    samples = list(strategy.sample(num, seed))  # cheap: nothing is compiled yet
    total = len(samples)
    fmas = graph.ops_count()
    with tempfile.TemporaryDirectory(prefix="xtc-strategy-") as scratch:
        for index, sample in enumerate(samples):
            try:
                backend = Backend(graph)
                scheduler = backend.get_scheduler()
                strategy.generate(scheduler, sample)
                compiler = backend.get_compiler(dump_file=f"{scratch}/s{index}", shared_lib=True)
                with contextlib.redirect_stderr(io.StringIO()):
                    module = compiler.compile(scheduler.schedule())
                # The fastest of 5 short runs: a single long run averages in the
                # machine's interruptions and can read 2x slow.
                evaluator = module.get_evaluator(repeat=5, min_repeat_ms=20)
                times, code, message = evaluator.evaluate()
                if code != 0 or not times:
                    raise RuntimeError(message)
                percent = 100.0 * fmas / min(times) / peak_fmas_per_s
            except Exception:  # an invalid sample scores 0; the search goes on
                percent = 0.0
            yield index, total, list(sample), percent
