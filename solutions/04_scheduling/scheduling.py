"""Kata 04, reference solution: schedule the tutorial's matmul, one transformation at a time.

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
    """i, k, j: the innermost loop walks a row of B and of C with stride 1."""
    sch.interchange(["i", "k", "j"])


def schedule_vectorize(sch: Any) -> None:
    """Tile j by 16 (a multiple of 4 NEON, 8 AVX2 and 16 AVX-512 lanes), vectorize it."""
    sch.strip_mine("j", {"j1": 16})
    sch.interchange(["i", "k", "j", "j1"])
    sch.vectorize(["j1"])


def schedule_register_tile(sch: Any) -> None:
    """A 4x16 register tile: 4 rows of C stay in vector registers across the whole k loop."""
    sch.strip_mine("i", {"i1": 4})
    sch.strip_mine("j", {"j1": 16})
    sch.interchange(["i", "j", "k", "i1", "j1"])
    sch.unroll({"i1": 4})
    sch.vectorize(["j1"])


def schedule_split(sch: Any) -> None:
    """J = 36: a vectorized main part j[0:32] and a scalar remainder j[32:36]."""
    sch.split("j", {"j0": 0, "j1": 32})
    sch.interchange(["i", "k", "j0", "j1"])
    sch.strip_mine("j", {"jv": 16}, root="./j0")
    sch.interchange(["j", "jv"], root="./j0")
    sch.vectorize(["jv"], root="./j0")
    sch.interchange(["j"], root="./j1")


def schedule_parallel(sch: Any) -> None:
    """The register-tiled schedule, with the outer i loop shared between the cores."""
    sch.strip_mine("i", {"i1": 4})
    sch.strip_mine("j", {"j1": 16})
    sch.interchange(["i", "j", "k", "i1", "j1"])
    sch.parallelize(["i"])
    sch.unroll({"i1": 4})
    sch.vectorize(["j1"])
