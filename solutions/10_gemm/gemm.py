"""Kata 10, reference solution: "How to optimize GEMM", replayed with XTC's primitives.

The problem is a 512x512x512 float32 matmul: A, B and C are 1 MiB each, far more than
L1 (32-48 KiB per core) and than L2 on most of the machines measured. Six steps, one
function each; each step keeps the previous one and adds one technique, and its test
races it against the step's reference and, for steps 2, 3 and 6, the previous step's
reference, on your machine:

    1. gemm_blocking      32x32 blocks of C, k in steps of 4:
                          sch.strip_mine("i", {"i1": 32}), ... ("j", {"j1": 32}), ("k", {"k1": 4})
                          sch.interchange(["i", "j", "k", "k1", "i1", "j1"])
    2. gemm_vectorize     + the innermost tile of j vectorized
    3. gemm_permute       inside a block: a row of C, then k1, then the vector:
                          ["i", "j", "k", "i1", "k1", "j1"]
    4. gemm_pack          + B's panel copied to a packed buffer: sch.pack_at("j", 1)
    5. gemm_write_cache   + C's block accumulated in a write buffer: sch.buffer_at("j"),
                          and k1 unrolled: sch.unroll({"k1": 4})
    6. gemm_parallel      + the outermost loop shared by the cores: sch.parallelize(["i"])

XTC 0.3.2's MLIR backend records pack_at but does not compile it, and drops buffer_at
unrecorded (the lesson): steps 4 and 5 change the kernel on TVM only.

Read README.md in this folder first, then run: pytest katas/10_gemm
"""

from typing import Any

#: The block of C (TVM's tutorial: bn = 32) and the step of k (its kfactor = 4).
BLOCK = 32
K_STEP = 4


def _blocks(sch: Any) -> None:
    sch.strip_mine("i", {"i1": BLOCK})
    sch.strip_mine("j", {"j1": BLOCK})
    sch.strip_mine("k", {"k1": K_STEP})


def gemm_blocking(sch: Any) -> None:
    """Step 1: compute C in 32x32 blocks; the loops over blocks outermost, k in steps of 4."""
    _blocks(sch)
    sch.interchange(["i", "j", "k", "k1", "i1", "j1"])


def gemm_vectorize(sch: Any) -> None:
    """Step 2: step 1, with the innermost tile of j vectorized."""
    gemm_blocking(sch)
    sch.vectorize(["j1"])


def gemm_permute(sch: Any) -> None:
    """Step 3: step 2, with the loops inside a block reordered: a row, then k1, then j1.

    A row of the block (32 floats: two AVX-512, four AVX2 or eight NEON vectors, so 8
    fmla per step of k1 on NEON) then stays in registers for the 4 steps of k1, and A is
    read along its rows.
    """
    _blocks(sch)
    sch.interchange(["i", "j", "k", "i1", "k1", "j1"])
    sch.vectorize(["j1"])


def gemm_pack(sch: Any) -> None:
    """Step 4: step 3, with the panel of B that a block reads packed at the loop over j."""
    gemm_permute(sch)
    sch.pack_at("j", 1)


def gemm_write_cache(sch: Any) -> None:
    """Step 5: step 4, with C's block in a write buffer at the loop over j, and k1 unrolled."""
    gemm_pack(sch)
    sch.buffer_at("j")
    sch.unroll({"k1": K_STEP})


def gemm_parallel(sch: Any) -> None:
    """Step 6: step 5, with the outermost loop over blocks shared by the cores."""
    gemm_write_cache(sch)
    sch.parallelize(["i"])
