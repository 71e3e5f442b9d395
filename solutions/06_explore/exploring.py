"""Kata 06, reference solution: search a space of schedules instead of writing one.

`candidate_specs()` is your search space: named descript specs (kata 05) for the
tutorial's 4x32x512 matmul. `explore(...)` is the search: a generator that compiles and
measures one candidate at a time and yields what it found, so a progress bar can show
each result as it arrives and a caller can stop early.

See your search run, with a progress bar, a top-10 table and a plot:
    xtc-katas explore 6 --backend mlir

Read README.md in this folder first, then run: pytest katas/06_explore
"""

import contextlib
import io
import tempfile
from collections.abc import Iterator
from typing import Any

from xtc.schedules.descript import descript_scheduler
from xtc.utils.cpu import cpu_info


def candidate_specs() -> list[tuple[str, dict]]:
    """Your search space: at most 32 (name, spec) pairs, each spec for descript_scheduler."""
    specs = [("i,k,j j#16", {"i": {}, "k": {}, "j": {}, "j#16": {"vectorize": True}})]
    lanes = cpu_info()["vsize"]["float32"]
    registers = 16 if lanes == 8 else 32  # ymm0-15 (AVX2), zmm0-31 (AVX-512), v0-v31 (NEON)
    # Register tiles: rows of C (unrolled) x a vector tile of columns, inside k. Only
    # those whose accumulators (rows x columns / lanes), columns / lanes vectors of B and
    # one broadcast of A fit the vector registers: 4x32 spills with AVX2 (16 + 4 + 1 = 21
    # of 16) and NEON (32 + 8 + 1 = 41 of 32), and a spilling tile is no candidate.
    for rows in (1, 2, 4):
        for columns in (16, 32):
            vectors = columns // lanes
            if rows * vectors + vectors + 1 > registers:
                continue
            spec: dict = {"i": {}, "j": {}, "k": {}}
            if rows > 1:
                spec[f"i#{rows}"] = {"unroll": True}
            spec[f"j#{columns}"] = {"vectorize": True}
            specs.append((f"{rows}x{columns} tile", spec))
    return specs


def explore(
    graph: Any, Backend: Any, specs: list[tuple[str, dict]], peak_fmas_per_s: float
) -> Iterator[tuple[int, int, str, float]]:
    """Compile and measure each spec lazily; yield (index, total, name, percent_of_peak).

    A spec that fails to schedule, compile or run yields 0.0, and the search goes on.
    """
    total = len(specs)
    fmas = graph.ops_count()
    # A fresh dump_file per compile (a reused one makes old modules run new kernels),
    # in a directory removed when the search ends.
    with tempfile.TemporaryDirectory(prefix="xtc-explore-") as scratch:
        for index, (name, spec) in enumerate(specs):
            try:
                backend = Backend(graph)
                scheduler = backend.get_scheduler()
                descript_scheduler(
                    scheduler=scheduler, node_name="C", abstract_dims=["i", "j", "k"], spec=spec
                )
                compiler = backend.get_compiler(dump_file=f"{scratch}/c{index}", shared_lib=True)
                with contextlib.redirect_stderr(io.StringIO()):
                    module = compiler.compile(scheduler.schedule())
                # The fastest of 5 short runs: a single long run averages in the
                # machine's interruptions and can read 2x slow.
                evaluator = module.get_evaluator(repeat=5, min_repeat_ms=20)
                times, code, message = evaluator.evaluate()
                if code != 0 or not times:
                    raise RuntimeError(message)
                percent = 100.0 * fmas / min(times) / peak_fmas_per_s
            except Exception:  # a broken candidate scores 0; the search goes on
                percent = 0.0
            yield index, total, name, percent
