"""What a schedule built, read from its loop nest, and whether it has the shape a task asks.

Every check reads `scheduler.get_loop_nest()`, the same for a schedule and a spec, on MLIR
and TVM, and returns the shortfalls in words a learner can act on ([]: the shape is
there). They say *why* a schedule is slow, or catch one fast for the wrong reason.
"""

from __future__ import annotations

import itertools
import math
import os
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache, partial
from typing import TYPE_CHECKING, Any

import numpy as np

from xtc_katas.kata.failures import KataFailure, raise_mistakes
from xtc_katas.measure import machine_description

if TYPE_CHECKING:
    from xtc_katas.kata.problems import Problem


class ShapeMistake(KataFailure):
    """The schedule compiles, but its loop nest lacks what the task is about."""


def require(mistakes: list[str], kata: str, function: str) -> None:
    """Fail with every shortfall of the loop nest, naming the kata and the function."""
    raise_mistakes(ShapeMistake, f"{kata} › {function}(): the loop nest is not there yet", mistakes)


#: The SIMD facts a schedule must fit: float32 lanes per vector, vector registers.
Machine = machine_description.Vectors


@cache
def machine() -> Machine:
    """This machine's vectors (or the emulated ISA's), from the harness's one description
    of the machine (measure/machine.py): NEON has 32 registers of 4 lanes."""
    return machine_description.vectors()


@dataclass(frozen=True)
class Loop:
    """One loop of a node's interchange: its name, the axis it walks, its trip count."""

    name: str
    axis: str
    size: int | None  # the tile size; None for an axis's outermost loop
    segment: bool  # a split segment: its loops are in the child node of that name


def loops(node: Any, axes: dict[str, str]) -> list[Loop]:
    """The node's loops, outer to inner."""
    sizes = {name: size for tiles in node.tiles.values() for name, size in tiles.items()}
    segments = {name for parts in node.splits.values() for name in parts}
    return [
        Loop(name, axes.get(name, name), sizes.get(name), name in segments)
        for name in node.interchange
    ]


def trip_count(node: Any, loop: Loop, sizes: dict[str, int] | None) -> int | None:
    """How many times `loop` runs per iteration of the loops around it: the extent it walks
    (the axis's size, or its tile's size) over the next tile of that axis inside it. None
    when the sizes are unknown or the axis is split (a segment's extent is its own)."""
    chain = [(loop.axis, (sizes or {}).get(loop.axis)), *node.tiles.get(loop.axis, {}).items()]
    names = [name for name, _ in chain]
    if node.splits.get(loop.axis) or loop.name not in names:
        return None
    at = names.index(loop.name)
    inner = chain[at + 1][1] if at + 1 < len(chain) else 1
    return None if chain[at][1] is None else -(-chain[at][1] // inner)


def _too_few_iterations(node: Any, loop: Loop, sizes: dict[str, int] | None) -> list[str]:
    """A parallel loop must have iterations to share: one of them leaves a core idle."""
    trips = trip_count(node, loop, sizes)
    if trips is None or trips >= 2:
        return []
    whole = (sizes or {}).get(loop.axis)
    instead = (
        f"an axis of the output with more than one (the axis {loop.axis!r} has size 1)"
        if whole == 1
        else f"e.g. a smaller tile of {loop.axis!r} or the loop over its tiles"
    )
    return [
        f"the parallel loop {loop.name!r} runs {trips} iteration: one thread does all the "
        f"work. Parallelize a loop with at least as many iterations as cores (this machine: "
        f"{os.cpu_count()}): {instead}"
    ]


def loop_axes(loop_nest: Any) -> dict[str, str]:
    """Every loop name of the nest, mapped to the axis (i, j, k) it iterates."""
    axes = {dim: dim for dim in loop_nest.abstract_dims}
    for node in loop_nest.nodes:
        for axis, tiles in node.tiles.items():
            axes.update({name: axis for name in tiles})
        for axis, segments in node.splits.items():
            axes.update({name: axis for name in segments})
    return axes


def _root(loop_nest: Any) -> tuple[Any, list[Loop]]:
    """The nest's root node and its loops, outer to inner."""
    return loop_nest.root_node, loops(loop_nest.root_node, loop_axes(loop_nest))


def _where(node: Any) -> str:
    return "" if node.parent is None else f" in split segment {node.root!r}"


#: Where a message sends a learner whose loop walks another axis than the stride-1 one:
#: the question, not the axis (the lesson asks it before any task names it).
WHICH_AXIS = (
    "Which axis walks consecutive addresses of the arrays it reads and writes? "
    "(kata 04's '1. Interchange: stride 1')"
)


def stride_one(loop_nest: Any, problem: Problem) -> list[str]:
    """Each innermost loop that runs the body (one per node that ends in a loop, not a
    split) walks the problem's vector axis (a matmul's j, along the rows of B and C):
    consecutive addresses."""
    axis, axes = problem.vector_axis, loop_axes(loop_nest)
    innermost = [(node, loops(node, axes)[-1:]) for node in loop_nest.nodes]
    return [
        f"the innermost loop{_where(node)} is {loop.name!r}, over axis {loop.axis!r}: "
        f"each step jumps to another row in memory. {WHICH_AXIS}"
        for node, last in innermost
        for loop in last
        if not loop.segment and loop.axis != axis
    ]


def vector_tile(loop_nest: Any, problem: Problem, node: Any = None) -> list[str]:
    """The innermost loop of `node` (default: the root) is a vectorized tile of the
    problem's vector axis, a multiple of the lanes."""
    simd, axis, node = machine(), problem.vector_axis, node or loop_nest.root_node
    node_loops = loops(node, loop_axes(loop_nest))
    if not node_loops or node_loops[-1].segment:
        return [f"there is no innermost loop{_where(node)} to vectorize"]
    last = node_loops[-1]
    if last.name not in node.vectorize:
        consecutive = (
            f"its axis {axis!r} walks consecutive addresses"
            if last.axis == axis
            else f"it walks axis {last.axis!r}, whose elements are not consecutive: {WHICH_AXIS}"
        )
        return [
            f"the innermost loop{_where(node)} {last.name!r} is not vectorized, and "
            f"{consecutive}; this machine's vectors hold {simd.lanes} floats"
        ]
    mistakes = []
    if last.axis != axis:
        mistakes.append(
            f"the vectorized loop {last.name!r}{_where(node)} walks axis {last.axis!r}, "
            f"whose elements are not consecutive in memory. {WHICH_AXIS}"
        )
    if last.size is None or last.size % simd.lanes:
        size = "the whole axis" if last.size is None else f"{last.size} iterations"
        mistakes.append(
            f"the vectorized loop {last.name!r}{_where(node)} has {size}: make it a tile "
            f"whose size is a multiple of {simd.lanes} (this machine: {simd.described})"
        )
    return mistakes


def accumulators_fit(loop_nest: Any, problem: Problem) -> list[str]:
    """The loops inside the last reduction loop walk a tile of the output that stays in
    vector registers across the reduction, unrolled by the schedule (a register tile) or
    by LLVM on its own (short plain loops: k, i, j, j1 on the tutorial's 4x32 keeps all
    16 ymm of C in registers on AVX2, 22-28 stack accesses a step, both backends). Its
    accumulators, one vector of B per column vector and one broadcast must fit the
    register file, or they spill to memory at every step. Told for a plain tile too: on
    Zen 3 (AVX2) that k-outermost nest read 0.63-0.84x the reference on MLIR and, j1 = 16,
    0.64-0.75x on TVM (per race), straddling the vectorize task's bar (0.60-0.70x the
    reference), so its race flipped between runs; a shape test's verdict does not
    (docs/calibration/04_scheduling.md). On AVX-512 the same tile is 8 zmm and fits."""
    simd, reductions = machine(), problem.reduction_axes
    node, node_loops = _root(loop_nest)
    last_k = max((n for n, loop in enumerate(node_loops) if loop.axis in reductions), default=-1)
    if last_k < 0:
        return []
    tile = {"rows": 1, "columns": 1}
    for loop in node_loops[last_k + 1 :]:
        trips = trip_count(node, loop, problem.axis_sizes)
        if trips is None:
            return []
        tile["columns" if loop.axis == problem.vector_axis else "rows"] *= trips
    rows, columns = tile["rows"], tile["columns"]  # columns: a multiple of the lanes
    accumulators, b_vectors = rows * columns // simd.lanes, columns // simd.lanes
    budget = simd.registers - b_vectors - 1
    if accumulators <= budget:
        return []
    k = "/".join(repr(axis) for axis in reductions)
    return [
        f"a {rows}x{columns} tile needs {accumulators} vector accumulators ({rows} x "
        f"{columns}/{simd.lanes}); this machine has {simd.registers} vector registers "
        f"({simd.isa}), and the tile needs {b_vectors} more for B's vectors "
        "and one for A's broadcast: it spills to memory. Keep its accumulators at or below "
        f"{budget}: fewer or smaller loops inside {k} (the loops after it in the interchange "
        f"walk this tile at every one of its steps)"
    ]


def register_tile(loop_nest: Any, problem: Problem) -> list[str]:
    """Inside the reduction loops, an unrolled tile of one of the problem's tile axes
    times a vectorized tile of its vector axis: for a matmul, a tile of i by j inside k;
    for a convolution, of w or h by f inside r, s and c. That tile of the output stays in
    vector registers for the whole reduction, within the machine's register budget."""
    node, node_loops = _root(loop_nest)
    mistakes = vector_tile(loop_nest, problem)
    names = [loop.name for loop in node_loops]
    unrolled_axes = problem.tile_axes
    reductions = problem.reduction_axes
    k = "/".join(reductions)
    last_k = max((n for n, loop in enumerate(node_loops) if loop.axis in reductions), default=-1)
    i_tiles = [  # the vector loop (innermost) is never the row tile, whatever it walks
        loop
        for loop in node_loops[last_k + 1 : -1]
        if loop.axis in unrolled_axes and loop.size is not None
    ]
    what = problem.tile_words
    innermost = node_loops[-1] if node_loops else None
    if not i_tiles and innermost is not None and innermost.axis in unrolled_axes:
        return [
            *mistakes,
            f"the tile {innermost.name!r} of {innermost.axis!r} is the innermost loop, the "
            f"vector, so no tile of {innermost.axis!r} is unrolled outside it: which of your "
            f"tiles walks consecutive addresses, and which holds the {what} that stay in "
            "registers (kata 04's section 3)?",
        ]
    if not i_tiles:
        first = unrolled_axes[0]
        either = " or ".join(repr(a) for a in unrolled_axes)
        return [
            *mistakes,
            f"no tile of {either} inside the {k!r} loop (the interchange is {names}): "
            f"make a tile of {first!r} (strip_mine) and put it after {k!r}, just before the "
            f"vector tile, so that {what} stay in registers",
        ]
    rows = i_tiles[-1]
    if rows.size is not None and rows.size < 2:
        mistakes.append(f"the tile {rows.name!r} has one step: tile 2 or more {what}")
    if rows.name not in node.unroll:
        mistakes.append(
            f"the row tile {rows.name!r} is not unrolled: unroll it by its full size, so "
            "that each step's accumulator is its own register by your schedule, not by "
            "LLVM's choice (it unrolls some short loops by itself, not all)"
        )
    elif rows.size is not None and node.unroll[rows.name] < rows.size:
        mistakes.append(
            f"the row tile {rows.name!r} is unrolled by {node.unroll[rows.name]}, not by its "
            f"{rows.size} steps: unroll it by its full size, so that every step's "
            "accumulator becomes its own register (a factor of 1 unrolls nothing)"
        )
    between = [loop for loop in node_loops[last_k + 1 : -1] if loop is not rows]
    for loop in between:
        trips = trip_count(node, loop, None)
        if trips is None or node.unroll.get(loop.name, 0) < trips:
            steps = "the whole axis" if trips is None else f"{trips} steps"
            mistakes.append(
                f"the loop {loop.name!r} ({steps}) runs between the {k!r} loop and the vector "
                f"tile without being unrolled: each of its steps needs its own accumulators, "
                f"which stay in registers across {k!r} only where LLVM happens to unroll it "
                f"by itself. Move it outside {k!r}, or make it a tile and unroll it fully"
            )
    return _oversized(node_loops, problem) + (mistakes or accumulators_fit(loop_nest, problem))


def _oversized(node_loops: list[Loop], problem: Problem) -> list[str]:
    """Tiles longer than the axis they tile in the task's problem: XTC accepts them and
    clips the tile, so a tile sized for another problem (a lesson's example on a larger
    shape, pasted) computes right and passes every other check; its size is not this
    task's answer."""
    sizes = problem.axis_sizes
    return [
        f"the tile {loop.name!r} spans {loop.size} of {loop.axis!r}, which has only "
        f"{sizes[loop.axis]} in this task's problem ({problem.label}): was it sized for "
        "another problem, such as a lesson's example? Size it for this one, within the "
        "register budget"
        for loop in node_loops
        if loop.size is not None and loop.size > sizes.get(loop.axis, loop.size)
    ]


def split_main_part(loop_nest: Any, problem: Problem) -> list[str]:
    """The vector axis split into segments, one of them with a vectorized tile (the main
    part)."""
    axis = problem.vector_axis
    root, root_loops = _root(loop_nest)
    segments = root.splits.get(axis, {})
    if len(segments) < 2:
        return [
            "the stride-1 axis (kata 04's section 1) is not split: split it into a main "
            "part, a multiple of the "
            "vector tile, and the remainder, then schedule each segment with its own "
            "interchange (its root= argument names the segment)"
        ]
    first = next((n for n, loop in enumerate(root_loops) if loop.segment), 0)
    if not any(loop.axis in problem.reduction_axes for loop in root_loops[:first]):
        k = "/".join(repr(axis) for axis in problem.reduction_axes)
        return [
            f"{axis!r} is split outside {k} (the interchange is {root.interchange}): each "
            f"segment then runs a {k} loop of its own, and the remainder's, with no vector "
            "work to overlap, is a chain of dependent adds, one latency per step. Split "
            f"{axis!r} inside {k}: both segments then run at every step of it"
        ]
    vectorized = [
        child
        for child in root.children
        if child.root in segments and not vector_tile(loop_nest, problem, child)
    ]
    if not vectorized:
        first = next((c for c in root.children if c.root in segments), None)
        why = vector_tile(loop_nest, problem, first) if first is not None else []
        return [
            f"no segment of {axis!r} has a vectorized tile: vectorize the main part"
            + (f" ({why[0]})" if why else "")
        ]
    return []


def parallel_outer(loop_nest: Any, problem: Problem) -> list[str]:
    """The outermost loop runs in parallel, over an axis without a reduction, and has
    iterations to share (by the problem's axis sizes)."""
    parallel_axes = _output_axes(problem)
    root, root_loops = _root(loop_nest)
    if not root.parallelize:
        return [
            "no loop is parallelized: parallelize([...]) a loop over "
            + " or ".join(repr(a) for a in parallel_axes)
            + ". Where must it stand for the threads to start once per call? (kata 04's "
            "section 5)"
        ]
    outer = root_loops[0]
    if outer.name not in root.parallelize:
        return [
            f"the parallel loop is {root.parallelize}, not the outermost loop "
            f"{outer.name!r}: an inner parallel loop forks and joins the threads once per "
            "iteration of the loops around it (kata 04's section 5)"
        ]
    if outer.axis not in parallel_axes:
        return [f"the outermost loop {outer.name!r} walks {outer.axis!r}, a reduction"]
    return _too_few_iterations(root, outer, problem.axis_sizes)


def rows_reuse_b(loop_nest: Any, problem: Problem, least: int = 4) -> list[str]:
    """Each pass of a matmul's loops over i outside its loops over j and k reads all of B:
    `least` rows of C a pass, as the reference's tile (docs/calibration/04_scheduling.md)."""
    i, j, k = _one(problem.tile_axes), problem.vector_axis, _one(problem.reduction_axes)
    node, node_loops = _root(loop_nest)
    sizes, inner = problem.axis_sizes, (j, k)
    outside = itertools.takewhile(lambda loop: loop.axis not in inner, node_loops)
    passes = math.prod(trip_count(node, loop, sizes) or 1 for loop in outside if loop.axis == i)
    rows = sizes[i] // passes
    if rows >= least:
        return []
    kib = sizes[k] * sizes[j] * np.dtype(problem.dtype).itemsize // 1024
    return [
        f"the loops over {i!r} outside the first loops over {j!r} and {k!r} run {passes} "
        f"times a call, and each time the loops inside read all of B ({kib} KiB) for {rows} "
        f"row(s) of C: every vector of B a step of {k!r} loads serves one FMA per row. Keep "
        f"{least} rows or more per read (a tile of {least} rows inside {k!r}), or put a loop "
        f"over {j!r} first (the lesson's section 5)"
    ]


def _output_axes(problem: Problem) -> tuple[str, ...]:
    """The problem's axes that are not reductions: each output element is computed by
    one iteration of them, so any of them can be shared by threads."""
    return tuple(dim for dim in problem.dims if dim not in problem.reduction_axes)


def _free_inside(node_loops: list[Loop], name: str, axes: tuple[str, ...]) -> list[str]:
    """The axes among `axes` whose outermost loop (the loop over their blocks) runs
    inside loop `name`: a buffer placed at `name` spans the whole of each of them."""
    names = [loop.name for loop in node_loops]
    at = names.index(name)
    return [
        axis
        for axis in axes
        if any(loop.axis == axis and loop.size is None for loop in node_loops[at + 1 :])
    ]


def _outside_reduction(node_loops: list[Loop], name: str, k: str) -> bool:
    """Whether loop `name` is outside every loop over the reduction axis `k`."""
    names = [loop.name for loop in node_loops]
    if name not in names:
        return False
    first_k = min((n for n, loop in enumerate(node_loops) if loop.axis == k), default=len(names))
    return names.index(name) < first_k


def fused_consumer(loop_nest: Any, problem: Problem) -> list[str]:
    """The consumer (kata 09's relu) runs inside the scheduled node's nest (one nest, not
    two), fused at a loop that is outside the reduction, where the node's values in that
    block are final."""
    k = _one(problem.reduction_axes)
    node_name = problem.scheduled_node
    node, node_loops = _root(loop_nest)
    if not node.fuse_consumer_at:
        return [
            f"the relu still runs in a nest of its own, after the whole of {node_name}: fuse "
            f"it into {node_name}'s nest at one of its loops (fuse_consumer_at, or "
            '"fuse_consumer" on that loop of a spec), one where the block is finished'
        ]
    return [
        f"the relu is fused at {at!r}, inside the {k!r} loop (the interchange is "
        f"{node.interchange}): there {node_name} holds partial sums, so fuse at a loop "
        f"outside {k!r}"
        for at in node.fuse_consumer_at
        if not _outside_reduction(node_loops, at, k)
    ]


def fused_part_rows(loop_nest: Any, problem: Problem) -> list[str]:
    """Where a fused relu's blocks are parts of rows of C, not whole rows: advice for a
    slow fused kernel on TVM, whose one-dimensional relu copies the whole range of C that
    covers a block (kata 09's lesson), not a shape mistake."""
    j = problem.vector_axis
    node, node_loops = _root(loop_nest)
    names = [loop.name for loop in node_loops]
    found = []
    for at in node.fuse_consumer_at:
        if at not in names:
            continue
        columns = [loop.name for loop in node_loops[: names.index(at) + 1] if loop.axis == j]
        if columns:
            found.append(
                f"the relu is fused at {at!r}, with {columns} (over {j!r}) at or outside it: "
                f"each fused block is part of some rows of {problem.scheduled_node}, and on "
                "TVM XTC 0.3.2's one-dimensional relu copies the range of "
                f"{problem.scheduled_node} that covers the block: how many floats is that "
                "range, against the block's? (kata 09's exercise)"
            )
    return found


def why_fusion_costs(loop_nest: Any, problem: Problem) -> str:
    """The one cause a slow fused kernel's nest shows, for the failure's "next:" line ("" for
    the task's last hint): a fusion at the wrong place first, for its fix changes the
    blocks; only then what its blocks copy on TVM. A cause is told once."""
    return "; ".join(fused_consumer(loop_nest, problem) or fused_part_rows(loop_nest, problem))


#: Kata 10's block of C, as its stub asks (other sizes: docs/calibration/10_gemm.md).
BLOCK = 32


def blocked(loop_nest: Any, problem: Problem) -> list[str]:
    """The output is computed block by block (kata 10's C): i and j are tiled into
    BLOCK x BLOCK blocks, their loops over blocks are the two outermost loops, and the
    reduction k is walked in steps (a tile of k)."""
    i, j, k = _one(problem.tile_axes), problem.vector_axis, _one(problem.reduction_axes)
    sizes = problem.axis_sizes
    node, node_loops = _root(loop_nest)
    names = [loop.name for loop in node_loops]
    mistakes = [
        f"axis {axis!r} is not tiled: a tile of it (strip_mine) makes its blocks, the loop "
        f"{axis!r} then walks from block to block"
        for axis in (i, j)
        if not node.tiles.get(axis)
    ]
    for axis in (i, j):
        block = next(iter(node.tiles.get(axis, {}).items()), None)
        if block and block[1] != BLOCK:
            mistakes.append(
                f"the block {block[0]!r} spans {block[1]} of {axis!r}: the stub asks for "
                f"{BLOCK}x{BLOCK} blocks, several rows by several columns whose rows of B "
                "are reused while the block is finished: the size of the lesson's "
                "arithmetic and of every step's reference"
            )
    k_tiles = [size for size in node.tiles.get(k, {}).values()]
    if k_tiles and k in sizes and max(k_tiles) >= sizes[k]:
        mistakes.append(
            f"the tile of {k!r} of {max(k_tiles)} covers the whole axis ({sizes[k]}): the "
            f"loop {k!r} then runs once, and nothing walks it in steps. Make it a few "
            "steps (TVM's kfactor)"
        )
    elif not k_tiles or max(k_tiles) < 2:
        ones = (
            ""
            if not k_tiles
            else f" (a tile of {max(k_tiles)} step walks it one element at a time)"
        )
        mistakes.append(
            f"axis {k!r} is not walked in steps{ones}: the task asks for a small tile of "
            "it (TVM's kfactor), which the later steps build on"
        )
    if mistakes:
        return mistakes
    if {loop.name for loop in node_loops[:2]} != {i, j}:
        mistakes.append(
            f"the two outermost loops are {names[:2]} (the interchange is {names}): put "
            f"{i!r} and {j!r}, the loops over blocks, first, so that one block of C is "
            "finished before the next starts, then the loops inside a block"
        )
    elif node_loops and node_loops[-1].axis == k:
        mistakes.append(
            f"the innermost loop {names[-1]!r} walks the reduction {k!r} (the interchange "
            f"is {names}): each step of {k!r} then updates one element at a time, a chain "
            "of dependent adds, where the vector loop could update a whole row of the block"
        )
    return mistakes


def permuted(loop_nest: Any, problem: Problem) -> list[str]:
    """Inside a block: a row of the output's block (a tile of i), then a tile of the
    reduction k, then the vector tile of j: that row stays in registers while the k tile
    runs, and A is read along its rows instead of down its columns."""
    i, j, k = _one(problem.tile_axes), problem.vector_axis, _one(problem.reduction_axes)
    node, node_loops = _root(loop_nest)
    mistakes = vector_tile(loop_nest, problem)
    last_three = [loop.axis for loop in node_loops[-3:]]
    if last_three != [i, k, j] or node_loops[-2].size is None:
        mistakes.append(
            f"the three innermost loops walk {last_three} (the interchange is "
            f"{node.interchange}): which order keeps a row of the block in registers while "
            f"{k!r} runs, and reads A along its rows? (the lesson's step 3)"
        )
    return mistakes


def packed(loop_nest: Any, problem: Problem) -> list[str]:
    """Input 1 (a matmul's B) is copied into a packed buffer (pack_at) at a loop outside
    the reduction, once per block (or per row of blocks); packed inside a loop over k, the
    copy runs again at every step of that loop."""
    input_idx = 1
    name, k = problem.input_names[input_idx], _one(problem.reduction_axes)
    node, node_loops = _root(loop_nest)
    at = [loop for loop, entry in node.pack_at.items() if entry[0] == input_idx]
    if not at:
        return [
            f"{name} (input {input_idx}) is read where it lies: pack the panel each block "
            'reads (pack_at, or "pack" on a loop of a spec), at a loop over blocks outside '
            f"{k!r}"
        ]
    if any(_outside_reduction(node_loops, loop, k) for loop in at):
        return []
    return [
        f"{name} is packed at {at[0]!r}, inside the {k!r} loop (the interchange is "
        f"{node.interchange}): the copy then runs at every step of {k!r}, for a few rows "
        f"each time. Pack at a loop over blocks outside {k!r}: the block's whole panel, "
        "copied once"
    ]


#: Backends whose scheduler records buffer_at in the loop nest. XTC 0.3.2's MLIR scheduler
#: does not: its buffer_at is an empty method ("TODO: not implemented"), MlirScheduler.py.
RECORDS_BUFFER_AT = ("tvm",)


def write_cache(loop_nest: Any, problem: Problem, backend: str) -> list[str]:
    """The output's block (kata 10's C) accumulates in a write buffer, outside the
    reduction and inside the loops over blocks of every other axis, so that it holds one
    block, with the reduction's tile unrolled. On a backend that does not record
    buffer_at (MLIR), only the unroll shows."""
    k, block = _one(problem.reduction_axes), (*problem.tile_axes, problem.vector_axis)
    output = problem.scheduled_node
    node, node_loops = _root(loop_nest)
    mistakes = []
    if not node.buffer_at and backend in RECORDS_BUFFER_AT:
        mistakes.append(
            f"{output}'s block is accumulated where {output} lies: a write buffer at the "
            "loop over blocks (buffer_at) keeps it apart, written back once the block is done"
        )
    for at in node.buffer_at:
        if not _outside_reduction(node_loops, at, k):
            mistakes.append(
                f"the write buffer is at {at!r}, inside the {k!r} loop: put it at a loop "
                f"outside {k!r}, so the block is written back once, not once per {k!r} step"
            )
        elif free := _free_inside(node_loops, at, block):
            mistakes.append(
                f"the write buffer is at {at!r}, outside the loop over blocks of "
                f"{' and '.join(repr(a) for a in free)} (the interchange is {node.interchange}): "
                "it then holds a whole row or column of blocks, not one block, and at N = 512 "
                "its rows fall into the same few L1 sets again"
            )
    k_tiles = [loop for loop in node_loops if loop.axis == k and loop.size is not None]
    unrolled = [tile for tile in k_tiles if tile.name in node.unroll]
    if not unrolled:
        mistakes.append(
            "the block's short loops are not unrolled: which one has no independent work "
            "across its steps (the lesson's step 5)?"
        )
    elif all(tile.size is not None and node.unroll[tile.name] < tile.size for tile in unrolled):
        tile = unrolled[-1]
        mistakes.append(
            f"the tile {tile.name!r} is unrolled by {node.unroll[tile.name]}, not by its "
            f"{tile.size} steps: unroll it by its size, so that its steps run back to back "
            "(a factor of 1 unrolls nothing)"
        )
    return mistakes


def parallel_rows(loop_nest: Any, problem: Problem) -> list[str]:
    """The output is shared by the cores (kata 11's convolution): the parallel loops walk
    axes of the output (each output element is computed by one thread), nothing that
    repeats runs outside them (an axis of size 1 may), and they have iterations to share."""
    parallel_axes, sizes = _output_axes(problem), problem.axis_sizes
    root, root_loops = _root(loop_nest)
    parallel = [loop for loop in root_loops if loop.name in root.parallelize]
    if not parallel:
        return [
            "no loop is parallelized: which loops walk independent parts of the output, "
            "and where must the parallel one stand for the threads to start once per call "
            "(kata 04's section 5)?"
        ]
    first = root_loops.index(parallel[0])
    either = ", ".join(repr(a) for a in parallel_axes)
    mistakes = [
        f"the parallel loop {loop.name!r} walks {loop.axis!r}: parallelize a loop over the "
        f"output ({either}), so that each output element is written by one thread"
        for loop in parallel
        if loop.axis not in parallel_axes
    ]
    outside = [loop.name for loop in root_loops[:first] if (trip_count(root, loop, sizes) or 2) > 1]
    if outside:
        mistakes.append(
            f"loops {outside} run outside the parallel loop {parallel[0].name!r}: they would "
            "fork and join the threads once per iteration of theirs. Where must the parallel "
            "loop stand for the threads to start once per call? (kata 04's section 5)"
        )
    between = [
        loop.name
        for loop in root_loops[first : root_loops.index(parallel[-1])]
        if loop not in parallel
    ]
    if between:
        mistakes.append(
            f"the parallel loops {[loop.name for loop in parallel]} have {between} between "
            "them: XTC's TVM backend fuses parallel loops into one (TVMScheduler: "
            "sch.fuse), which needs them adjacent, and one loop over the output is enough "
            "for the cores: parallelize one alone"
        )
    for loop in parallel:
        mistakes += _too_few_iterations(root, loop, sizes)
    return mistakes


#: The shape checks a task may name in the manifest (its `shape`), each read on the
#: task's problem (write_cache: and backend); `task.assert_shape()` asserts the list.
SHAPES: dict[str, Callable[..., list[str]]] = {
    "stride_one": stride_one,
    "vector_tile": vector_tile,
    "accumulators_fit": accumulators_fit,
    "register_tile": register_tile,
    "split_main_part": split_main_part,
    "parallel_outer": parallel_outer,
    "rows_reuse_b": rows_reuse_b,
    "fused_consumer": fused_consumer,
    "blocked": blocked,
    "permuted": permuted,
    "packed": packed,
    "write_cache": write_cache,
    "parallel_rows": parallel_rows,
}


def _one(axes: tuple[str, ...]) -> str:
    """The one axis of a check written for one (kata 10's: a matmul's k, its i)."""
    if len(axes) != 1:
        raise LookupError(f"this shape check reads one axis, the problem has {axes}")
    return axes[0]


def shape_mistakes(
    names: tuple[str, ...], loop_nest: Any, problem: Problem, backend: str
) -> list[str]:
    """The mistakes of every shape check in `names` (a task's `shape`), in order."""
    unknown = [name for name in names if name not in SHAPES]
    if unknown:
        raise LookupError(f"no shape check {unknown}; the checks are {sorted(SHAPES)}")
    checks = {**SHAPES, "write_cache": partial(write_cache, backend=backend)}
    return [m for name in names for m in checks[name](loop_nest, problem)]
