"""Kata 04: schedule the tutorial's matmul, one transformation at a time.

Each function receives `sch`, a fresh scheduler of the kata's problem (C = A @ B with
loops i, j, k: `for i, for j, for k: C[i, j] += A[i, k] * B[k, j]`), and calls its
primitives; it returns nothing. The primitives only record: the harness compiles `sch`.

    sch.strip_mine("j", {"j1": 16})       # split loop j into j (outer) and j1 (16 steps)
    sch.interchange(["i", "k", "j", "j1"])  # the loop order, outer to inner: every loop
    sch.vectorize(["j1"])                 # SIMD on the innermost loop
    sch.unroll({"i1": 4})                 # unroll i1 by 4
    sch.parallelize(["i"])                # share the outermost loop between the cores
    sch.split("j", {"j0": 0, "j1": 32})   # segments j[0:32] and j[32:], scheduled apart

Read README.md in this folder first, then run: pytest katas/04_scheduling
"""

from typing import Any


def schedule_interchange(sch: Any) -> None:
    """Reorder the loops so that the innermost loop walks B and C with stride 1."""
    raise NotImplementedError


def schedule_vectorize(sch: Any) -> None:
    """Tile j by a multiple of the SIMD width, put the tile innermost and vectorize it."""
    raise NotImplementedError


def schedule_register_tile(sch: Any) -> None:
    """An (i1, j1) tile of C kept in registers across the k loop: i1 unrolled, j1 vectorized."""
    raise NotImplementedError


def schedule_split(sch: Any) -> None:
    """J = 36: split j into a vectorized main part j[0:32] and a remainder j[32:36]."""
    raise NotImplementedError


def schedule_parallel(sch: Any) -> None:
    """A 128x256x512 matmul: parallelize the outermost loop over i (keep the fast inner tile)."""
    raise NotImplementedError
