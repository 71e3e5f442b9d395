"""Kata 05: the schedules of kata 04, declared instead of built step by step.

Each function returns a spec for `xtc.schedules.descript.descript_scheduler`: a dict
whose keys are the loops from outer to inner, each mapped to its annotations. The
examples below use other axes and sizes than the tasks need:

    "k": {}                         # a loop over an axis (i, j or k)
    "k#8": {}                       # a tile of 8 iterations of the k loop above it
    "i#8": {"vectorize": True}      # a tile, vectorized (innermost only)
    "k#4": {"unroll": True}         # a tile, fully unrolled ({"unroll": 2}: by 2)
    "j": {"parallelize": True}      # a loop shared by the cores
    "i[0:6]": {...}, "i[6:]": {...} # split segments of i, each holding the spec of the
                                    # loops inside it

The harness applies it with descript_scheduler(scheduler, node_name="C",
abstract_dims=["i", "j", "k"], spec=your_spec) and compiles the result.

Read README.md in this folder first, then run: pytest katas/05_descript
"""


def vectorize_spec() -> dict:
    """Kata 04's vectorize step: stride 1 innermost, as a vectorized tile of j."""
    raise NotImplementedError


def register_tile_spec() -> dict:
    """Kata 04's register tile: rows of i unrolled and a vector of j, inside k."""
    raise NotImplementedError


def split_spec() -> dict:
    """J = 36: a vectorized main part of j and a remainder, as split segments inside k."""
    raise NotImplementedError


def parallel_spec() -> dict:
    """A 128x256x512 matmul: the register tile, with a loop shared by the cores whose
    threads start once per call (kata 04's section 5 asks where that loop stands).

    Each pass of the loops over i outside those over j and k reads all of B: keep 4 rows
    or more per pass."""
    raise NotImplementedError
