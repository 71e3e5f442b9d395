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
"""

from typing import Any

from xtc.schedules.descript import descript_scheduler


def schedule_large(sch: Any, threads: int) -> None:
    """Schedule the 1024^3 matmul for `threads` threads (parallelize only when threads > 1)."""
    spec = {
        # k outermost in blocks of 512, B packed per k block (TVM; MLIR ignores "pack");
        # i in blocks of 32 rows, A packed per block: the micro-kernel streams contiguous
        # panels. The micro-kernel: 8 rows x 32 columns of C, 16 AVX-512 accumulators
        # (8 rows x 2 vectors), k unrolled by 2.
        "k": {"pack": (1, None, True)},
        "i": {"pack": (0, None, True)},
        "j": {},
        "i#32": {},
        "k#512": {},
        "k#2": {"unroll": True},
        "i#8": {"unroll": True},
        "j#32": {"vectorize": True},
    }
    # On MLIR, XTC 0.3.2's OpenMP lowering slows every thread down (measured on 1024^3:
    # 28 ms parallel vs 21 ms sequential), so only TVM gets the parallel loop.
    if threads > 1 and "mlir" not in type(sch).__module__:
        spec["i"]["parallelize"] = True
    descript_scheduler(scheduler=sch, node_name="C", abstract_dims=["i", "j", "k"], spec=spec)
