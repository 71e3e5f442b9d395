"""Tests of kata 05, on both backends. `@pytest.mark.task("f")` names the function a test
checks; its `task` fixture applies f's spec on the manifest's problem for that task.

The same three judgements as kata 04, on the loop nest the spec declares: it computes
A @ B, it has the shape the task asks (read from `get_loop_nest()` after
descript_scheduler), and it reaches this run's bar, timed side by side with the naive
schedule, the reference spec and the previous task's reference (xtc_katas/checks/speed_rule.py).
"""

import pytest

# --- vectorize_spec: the nest of schedule_vectorize, declared -------------------------------


@pytest.mark.task("vectorize_spec")
def test_vectorize_spec_computes_the_matmul(task):
    task.assert_computes()


@pytest.mark.task("vectorize_spec")
def test_vectorize_spec_declares_a_stride_1_vector_tile(task):
    task.assert_shape()


@pytest.mark.perf
@pytest.mark.task("vectorize_spec")
def test_vectorize_spec_keeps_up_and_beats_interchange_where_it_pays(task):
    task.assert_speed()


# --- register_tile_spec ---------------------------------------------------------------


@pytest.mark.task("register_tile_spec")
def test_register_tile_spec_computes_the_matmul(task):
    task.assert_computes()


@pytest.mark.task("register_tile_spec")
def test_register_tile_spec_declares_an_unrolled_tile_inside_k(task):
    task.assert_shape()


@pytest.mark.perf
@pytest.mark.task("register_tile_spec")
def test_register_tile_spec_keeps_up_and_beats_vectorize_where_it_pays(task):
    task.assert_speed()


# --- split_spec --------------------------------------------------------------------------


@pytest.mark.task("split_spec")
def test_split_spec_computes_the_matmul(task):
    task.assert_computes()


@pytest.mark.task("split_spec")
def test_split_spec_declares_a_vectorized_main_part(task):
    task.assert_shape()


@pytest.mark.perf
@pytest.mark.task("split_spec")
def test_split_spec_keeps_up_and_beats_interchange_where_it_pays(task):
    task.assert_speed()


# --- parallel_spec -----------------------------------------------------------------------


@pytest.mark.task("parallel_spec")
def test_parallel_spec_computes_the_matmul(task):
    task.assert_computes()


@pytest.mark.task("parallel_spec")
def test_parallel_spec_starts_the_threads_once_per_call(task):
    task.assert_shape()


@pytest.mark.perf
@pytest.mark.task("parallel_spec")
def test_parallel_spec_keeps_up_and_beats_the_register_tile_where_it_pays(task):
    task.assert_speed()
