"""Kata 04: schedule the tutorial's matmul, one transformation at a time.

Each function receives `sch`, a fresh scheduler of the kata's problem (C = A @ B with
loops i, j, k: `for i, for j, for k: C[i, j] += A[i, k] * B[k, j]`), and calls its
primitives; it returns nothing. The primitives only record: the harness compiles `sch`.
The problem: I, J, K = 4, 32, 512 (split: 4x36x512; parallel: 128x256x512). This
machine's SIMD lanes: cpu_info()["vsize"]["float32"], from xtc.utils.cpu.
The examples below use other axes and sizes than the tasks need:

    sch.strip_mine("i", {"ii": 8})           # i steps by 8; a new loop ii walks the 8
    sch.interchange(["j", "k", "i", "ii"])   # the loop order, outer to inner: every loop
    sch.vectorize(["ii"])                    # SIMD on a loop: innermost, not a reduction
    sch.unroll({"ii": 8})                    # copy the body; by the full trip count, no loop left
    sch.parallelize(["j"])                   # share a loop's iterations among the cores
    sch.split("i", {"i0": 0, "i1": 2})       # segments i[0:2] and i[2:], scheduled apart:
    sch.interchange(["k", "i0", "i1"])       #   the root's order names the segments;
    sch.interchange(["i", "j"], root="./i0")  #  each segment needs an interchange of its
    sch.interchange(["j", "i"], root="./i1")  #  own, where its loop keeps the axis's name

Read README.md in this folder first, then run: pytest katas/04_scheduling
"""

from typing import Any


def schedule_interchange(sch: Any) -> None:
    """Order the loops so that the innermost one walks B and C with stride 1."""
    raise NotImplementedError


def schedule_vectorize(sch: Any) -> None:
    """Make the innermost loop a vectorized tile of your interchange's innermost axis, a
    multiple of the SIMD lanes; a tile unrolled inside k fits the registers.

    A tile comes from strip_mine, its place from interchange, SIMD from vectorize."""
    raise NotImplementedError


def schedule_register_tile(sch: Any) -> None:
    """Keep a tile of C (several rows x a vector tile) in registers across the whole k loop.

    Each row unrolled is an accumulator of its own; the tile must fit the vector registers."""
    raise NotImplementedError


def schedule_split(sch: Any) -> None:
    """A 4x36x512 matmul, whose stride-1 axis may be no multiple of your vector tile:
    that axis split inside k into a vectorized main part and a remainder."""
    raise NotImplementedError


def schedule_parallel(sch: Any) -> None:
    """A 128x256x512 matmul: a loop shared among the cores, around a fast tile, whose
    threads start once per call (the lesson's section 5 asks where that loop stands).

    Each pass of the loops over i outside those over j and k reads all of B: keep 4 rows
    or more per pass."""
    raise NotImplementedError
