"""Kata 08: the tutorial's final challenge, a 1024x1024x1024 float32 matmul vs numpy.

`schedule_large(sch, threads)` receives a fresh scheduler of the 1024^3 problem (loops
i, j, k, node "C") and applies your schedule for `threads` threads: imperative
primitives (kata 04), a descript spec (kata 05):

    from xtc.schedules.descript import descript_scheduler
    descript_scheduler(scheduler=sch, node_name=..., abstract_dims=..., spec=...)

or a strategy's `generate(sch, sample)` with a sample you chose (kata 07). A spec's
loops, outermost first, each take annotations: {"unroll": True}, {"vectorize": True},
{"parallelize": True}, {"pack": (input, memory, pad)} (input 0 is A, 1 is B; memory
None for the default; pad True to offset each packed row by a cache line; TVM only in
XTC 0.3.2); "i#64" is a tile of 64 rows, "i[0:1000]" a part of a split. The tests run it
on both backends, with 1 thread, 2, and every core, side by side with numpy on as many
threads.

Read README.md in this folder first (start with TVM: packing works on TVM only in XTC
0.3.2), then run: pytest katas/08_large_matmul --backend tvm
"""

from typing import Any


def schedule_large(sch: Any, threads: int) -> None:
    """Schedule the 1024^3 matmul for `threads` threads (parallelize only when threads > 1).

    The goal, layer by layer: a register micro-kernel of C that keeps this CPU's FMA units
    busy, cache blocks around it, the panels it streams packed, and, for threads > 1, the
    outermost loop over the output shared by the cores (the lesson gives the arithmetic)."""
    raise NotImplementedError
