"""Kata 10: "How to optimize GEMM" (TVM's tutorial), replayed with XTC's primitives.

The problem is a 512x512x512 float32 matmul C = A @ B (loops i, j, k; node "C"): A, B
and C are 1 MiB each, far more than L1. Six steps, one function each; each step keeps
the previous one and adds one technique (calling the previous function is fine):

    1. gemm_blocking      C computed one 32x32 block at a time, k walked in short groups
    2. gemm_vectorize     the block's row computed with vector instructions
    3. gemm_permute       a row of the block kept in registers while k's steps run
    4. gemm_pack          the panel of B that a block reads copied to a buffer of its own
    5. gemm_write_cache   the block accumulated in a buffer of its own; one short loop unrolled
    6. gemm_parallel      the blocks shared by the cores

The primitives, shown on other axes and sizes (xtc/itf/schd/scheduler.py):

    sch.strip_mine("w", {"w1": 8})          # w steps by 8, w1 walks inside the tile
    sch.interchange(["w", "v", "w1", "v1"]) # every loop, outermost first
    sch.vectorize(["v1"]); sch.unroll({"w1": 8})
    sch.pack_at("w", 0)                     # copy the part of input 0 read below w
    sch.buffer_at("v")                      # accumulate the output written below v
    sch.parallelize(["w"])

The lesson (README.md in this folder) says why each step pays, or does not, and what XTC
0.3.2's MLIR backend leaves out (pack_at and buffer_at change the kernel on TVM only).
Then run: pytest katas/10_gemm
"""

from typing import Any


def gemm_blocking(sch: Any) -> None:
    """Step 1: compute C in 32x32 blocks, k in short groups of steps (TVM's kfactor).

    One block of C is finished before the next starts, and inside a block each group of
    k's steps reads slices of A and B that the whole block shares (the lesson's step 1)."""
    raise NotImplementedError


def gemm_vectorize(sch: Any) -> None:
    """Step 2: step 1, with the block's row (the innermost loop, a tile) computed by
    vector instructions: vectorize names that tile, not the loop over blocks."""
    raise NotImplementedError


def gemm_permute(sch: Any) -> None:
    """Step 3: step 2, with the loops inside a block reordered so that one row of the
    block stays in registers while the steps of k run over it, the vector innermost."""
    raise NotImplementedError


def gemm_pack(sch: Any) -> None:
    """Step 4: step 3, with the panel of B that a block reads packed: copied once per
    block, at a loop over blocks outside k (pack_at names the loop and the input)."""
    raise NotImplementedError


def gemm_write_cache(sch: Any) -> None:
    """Step 5: step 4, with C's block accumulated in a write buffer that holds one block
    (buffer_at names the loop), and one short tile loop unrolled by its full trip count:
    which one, the lesson's step 5 asks."""
    raise NotImplementedError


def gemm_parallel(sch: Any) -> None:
    """Step 6: step 5, with the outermost loop over blocks shared by the cores."""
    raise NotImplementedError
