"""Tests of kata 10, on both backends. `@pytest.mark.task("f")` names the function a test
checks; its `task` fixture builds f's schedule of a 512x512x512 float32 matmul.

Each step is judged three ways: it computes A @ B (harness-made inputs, edge values
included); its loop nest has the step's technique, on top of the previous step's; and,
timed side by side with the naive schedule and the step's reference on this machine
(steps 2, 3 and 6 with the previous step's reference too), it reaches this run's bar
(xtc_katas/checks/speed_rule.py: HEADROOM x the reference's speedup, capped by the
manifest; where the previous step is raced, at least ABOVE_PREVIOUS x its figure, never
above HEADROOM x the reference, so a test "... beats X where it pays" asks that of X
wherever the reference is PAYS x X: the staircase of TVM's tutorial, as far as it holds
on your CPU).
"""

import pytest

# --- gemm_blocking: 32x32 blocks of C --------------------------------------------------------


@pytest.mark.task("gemm_blocking")
def test_gemm_blocking_computes_the_matmul(task):
    task.assert_computes()


@pytest.mark.task("gemm_blocking")
def test_gemm_blocking_walks_c_block_by_block(task):
    task.assert_shape()


@pytest.mark.perf
@pytest.mark.task("gemm_blocking")
def test_gemm_blocking_keeps_up_with_its_reference(task):
    task.assert_speed()


# --- gemm_vectorize ---------------------------------------------------------------------


@pytest.mark.task("gemm_vectorize")
def test_gemm_vectorize_computes_the_matmul(task):
    task.assert_computes()


@pytest.mark.task("gemm_vectorize")
def test_gemm_vectorize_vectorizes_the_blocks_row(task):
    task.assert_shape()


@pytest.mark.perf
@pytest.mark.task("gemm_vectorize")
def test_gemm_vectorize_keeps_up_and_beats_blocking_where_it_pays(task):
    task.assert_speed()


# --- gemm_permute -----------------------------------------------------------------------


@pytest.mark.task("gemm_permute")
def test_gemm_permute_computes_the_matmul(task):
    task.assert_computes()


@pytest.mark.task("gemm_permute")
def test_gemm_permute_keeps_a_row_of_the_block_in_registers(task):
    task.assert_shape()


@pytest.mark.perf
@pytest.mark.task("gemm_permute")
def test_gemm_permute_keeps_up_and_beats_vectorize_where_it_pays(task):
    task.assert_speed()


# --- gemm_pack ----------------------------------------------------------------------------


@pytest.mark.task("gemm_pack")
def test_gemm_pack_computes_the_matmul(task):
    task.assert_computes()


@pytest.mark.task("gemm_pack")
def test_gemm_pack_packs_b(task):
    task.assert_shape()


@pytest.mark.perf
@pytest.mark.task("gemm_pack")
def test_gemm_pack_keeps_up_with_its_reference(task):
    task.assert_speed()


# --- gemm_write_cache ---------------------------------------------------------------------


@pytest.mark.task("gemm_write_cache")
def test_gemm_write_cache_computes_the_matmul(task):
    task.assert_computes()


@pytest.mark.task("gemm_write_cache")
def test_gemm_write_cache_buffers_c_and_unrolls_a_short_loop(task):
    task.assert_shape()


@pytest.mark.perf
@pytest.mark.task("gemm_write_cache")
def test_gemm_write_cache_keeps_up_with_its_reference(task):
    task.assert_speed()


# --- gemm_parallel ------------------------------------------------------------------------


@pytest.mark.task("gemm_parallel")
def test_gemm_parallel_computes_the_matmul(task):
    task.assert_computes()


@pytest.mark.task("gemm_parallel")
def test_gemm_parallel_shares_the_outer_loop(task):
    task.assert_shape()


@pytest.mark.perf
@pytest.mark.task("gemm_parallel")
def test_gemm_parallel_keeps_up_and_beats_write_cache_where_it_pays(task):
    task.assert_speed()
