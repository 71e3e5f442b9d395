"""Tests of kata 04, on both backends. `@pytest.mark.task("f")` names the function a test
checks; its `task` fixture builds f's schedule on the manifest's problem for that task.

Every task is judged three ways: the compiled schedule computes A @ B (harness-made
inputs, edge values included); its loop nest has the shape the task asks (read from
`get_loop_nest()`, the same on MLIR and TVM); and it is fast enough: timed side by side
with the naive schedule, the reference solution and the previous task's reference, on
this machine, in one run, it must reach this run's bar (xtc_katas/checks/speed_rule.py:
HEADROOM x the reference's speedup, capped by the manifest, and past the previous technique
where speed can tell them apart).
"""

import pytest

# --- schedule_interchange: the innermost loop walks memory with stride 1 -------------------


@pytest.mark.task("schedule_interchange")
def test_schedule_interchange_computes_the_matmul(task):
    task.assert_computes()


@pytest.mark.task("schedule_interchange")
def test_schedule_interchange_walks_memory_with_stride_1(task):
    task.assert_shape()


@pytest.mark.perf
@pytest.mark.task("schedule_interchange")
def test_schedule_interchange_keeps_up_with_its_reference(task):
    task.assert_speed()


# --- schedule_vectorize: the innermost loop runs on vectors ---------------------------------


@pytest.mark.task("schedule_vectorize")
def test_schedule_vectorize_computes_the_matmul(task):
    task.assert_computes()


@pytest.mark.task("schedule_vectorize")
def test_schedule_vectorize_has_a_vector_tile(task):
    task.assert_shape()


@pytest.mark.perf
@pytest.mark.task("schedule_vectorize")
def test_schedule_vectorize_keeps_up_and_beats_interchange_where_it_pays(task):
    task.assert_speed()


# --- schedule_register_tile: a tile of C held in registers across k -----------------------


@pytest.mark.task("schedule_register_tile")
def test_schedule_register_tile_computes_the_matmul(task):
    task.assert_computes()


@pytest.mark.task("schedule_register_tile")
def test_schedule_register_tile_has_an_unrolled_tile_inside_k(task):
    task.assert_shape()


@pytest.mark.perf
@pytest.mark.task("schedule_register_tile")
def test_schedule_register_tile_keeps_up_and_beats_vectorize_where_it_pays(task):
    # schedule_vectorize's reference runs in the same race: a vectorized schedule without
    # a register tile must beat it by 1.15x, and the shape test catches it anyway.
    task.assert_speed()


# --- schedule_split: a vectorized main part and a remainder -------------------------------


@pytest.mark.task("schedule_split")
def test_schedule_split_computes_the_matmul(task):
    # The edge inputs end each array with -64, its last element: a skipped remainder
    # shows there.
    task.assert_computes()


@pytest.mark.task("schedule_split")
def test_schedule_split_has_a_vectorized_main_part(task):
    task.assert_shape()


@pytest.mark.perf
@pytest.mark.task("schedule_split")
def test_schedule_split_keeps_up_and_beats_interchange_where_it_pays(task):
    task.assert_speed()


# --- schedule_parallel: a loop shared by the cores ---------------------------------------


@pytest.mark.task("schedule_parallel")
def test_schedule_parallel_computes_the_matmul(task):
    task.assert_computes()


@pytest.mark.task("schedule_parallel")
def test_schedule_parallel_starts_the_threads_once_per_call(task):
    task.assert_shape()


@pytest.mark.perf
@pytest.mark.task("schedule_parallel")
def test_schedule_parallel_keeps_up_and_beats_the_register_tile_where_it_pays(task):
    # % of peak here is of all the cores. The sequential register tile runs in the same
    # race: on TVM the bar sits above it; on MLIR, whose parallel loop gains from about
    # 1.8x (Zen 5, the lesson's table) to little (other CPUs, docs/calibration/
    # 04_scheduling.md), the shape test is what requires the parallel loop.
    task.assert_speed()
