"""Kata 05: the schedules of kata 04, declared instead of built step by step.

Each function returns a spec for `xtc.schedules.descript.descript_scheduler`: a dict
whose keys are the loops from outer to inner, each mapped to its annotations.

    "i": {}                        # a loop over an axis (i, j or k)
    "j#16": {"vectorize": True}    # a tile of 16 iterations of j, vectorized
    "i#4": {"unroll": True}        # a tile of 4 iterations of i, fully unrolled
    "i": {"parallelize": True}     # a loop shared by the cores
    "j[0:32]": {...}               # a split segment of j, holding its own nested spec

The harness applies it with descript_scheduler(scheduler, node_name="C",
abstract_dims=["i", "j", "k"], spec=your_spec) and compiles the result.

Read README.md in this folder first, then run: pytest katas/05_descript
"""


def vectorize_spec() -> dict:
    """The tutorial's spec: loops i, k, j, and an innermost vectorized tile of j."""
    raise NotImplementedError


def register_tile_spec() -> dict:
    """kata 04's register tile: i, j, k, then an unrolled tile of i and a vector tile of j."""
    raise NotImplementedError


def split_spec() -> dict:
    """J = 36: segments j[0:32] (vectorized by tiles of 16) and j[32:] (the remainder)."""
    raise NotImplementedError


def parallel_spec() -> dict:
    """A 128x256x512 matmul: the register tile, with the outermost loop parallelized."""
    raise NotImplementedError
