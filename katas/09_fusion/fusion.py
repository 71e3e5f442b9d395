"""Kata 09: fuse the relu into the matmul's loop nest, and measure what it buys.

The problem is R = relu(A @ B) with A of 512x16 and B of 16x512: a large output and a
short reduction, where the relu's own pass costs most (katas/09_fusion/README.md). Each
function works on the matmul node C (loops i, j, k); the relu R that follows it runs,
unfused, in a loop nest of its own after the whole matmul.

One primitive moves C's consumer into C's nest, shown here on a loop "b" of another nest:

    sch.fuse_consumer_at("b")       # at each step of loop b, the consumer runs on the
                                    # part of the output that step has finished
    {"b": {"fuse_consumer": True}}  # the same, as an annotation in a descript spec

Where to fuse is the lesson's question: the loop must enclose the whole reduction, and
among the loops that do, the lesson measures what each costs. The tests race your
schedule against the same schedule unfused.

Read README.md in this folder first, then run: pytest katas/09_fusion
"""

from typing import Any


def schedule_fused(sch: Any) -> None:
    """A register tile of C, with the relu fused into C's nest at a loop outside k.

    The tile is kata 04's (rows unrolled by a vectorized tile of columns, both inside k,
    within the register budget); the fused loop is the one, outside k, whose steps
    finish the part of C that costs the least to fuse (the lesson measures the
    candidates)."""
    raise NotImplementedError


def fused_spec() -> dict:
    """The same schedule as a descript spec: the relu fused with a "fuse_consumer"
    annotation on one loop (kata 05's register-tile spec, plus that annotation)."""
    raise NotImplementedError
