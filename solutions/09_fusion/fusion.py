"""Kata 09, reference solution: fuse the relu into the matmul's loop nest, and measure what it buys.

The problem is R = relu(A @ B) with A of 512x16 and B of 16x512: a large output and a
short reduction, where the relu's own pass costs most (katas/09_fusion/README.md). Each
function works on the matmul node C; the relu R that follows it runs, unfused, in a loop
nest of its own after the whole matmul.

    sch.fuse_consumer_at("i")       # move C's consumer into C's nest at loop i, right
                                    # after that block of C is final (on MLIR the relu
                                    # itself; on TVM a copy of C, the lesson says why)
    {"i": {"fuse_consumer": True}}  # the same, in a descript spec

Start from kata 04's register tile (an unrolled tile of i, a vectorized tile of j, both
inside k). The tests race your schedule against the same schedule unfused.

Read README.md in this folder first, then run: pytest katas/09_fusion
"""

from typing import Any


def schedule_fused(sch: Any) -> None:
    """A register tile of C, with the relu fused into C's nest at a loop outside k.

    Fused at i, the relu runs once per block of 4 whole rows of C: on TVM the values it
    reads are one contiguous range (see the lesson: fused at j they are not, and on TVM
    that took about twice the time of fusing at i at 512x512x16, AMD EPYC family 26 and
    Intel Xeon family 6 model 207).
    """
    sch.strip_mine("i", {"i1": 4})
    sch.strip_mine("j", {"j1": 16})
    sch.interchange(["i", "j", "k", "i1", "j1"])
    sch.unroll({"i1": 4})
    sch.vectorize(["j1"])
    sch.fuse_consumer_at("i")


def fused_spec() -> dict:
    """The same schedule as a descript spec: the relu fused with a "fuse_consumer" annotation."""
    return {
        "i": {"fuse_consumer": True},
        "j": {},
        "k": {},
        "i#4": {"unroll": True},
        "j#16": {"vectorize": True},
    }
