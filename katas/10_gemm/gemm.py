"""Kata 10: "How to optimize GEMM" (TVM's tutorial), replayed with XTC's primitives.

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


def gemm_blocking(sch: Any) -> None:
    """Step 1: compute C in 32x32 blocks; the loops over blocks outermost, k in steps of 4."""
    raise NotImplementedError


def gemm_vectorize(sch: Any) -> None:
    """Step 2: step 1, with the innermost tile of j vectorized."""
    raise NotImplementedError


def gemm_permute(sch: Any) -> None:
    """Step 3: step 2, with the loops inside a block reordered: a row, then k1, then j1."""
    raise NotImplementedError


def gemm_pack(sch: Any) -> None:
    """Step 4: step 3, with the panel of B that a block reads packed at the loop over j."""
    raise NotImplementedError


def gemm_write_cache(sch: Any) -> None:
    """Step 5: step 4, with C's block in a write buffer at the loop over j, and k1 unrolled."""
    raise NotImplementedError


def gemm_parallel(sch: Any) -> None:
    """Step 6: step 5, with the outermost loop over blocks shared by the cores."""
    raise NotImplementedError
