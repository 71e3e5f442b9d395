"""Tests of kata 05, on both backends. Each test's name contains the function it checks.

The same three judgements as kata 04, on the loop nest the spec declares: it computes
A @ B, it has the shape the task asks (read from `get_loop_nest()` after
descript_scheduler), and it reaches this run's bar, timed side by side with the naive
schedule, the reference spec and the previous task's reference (xtc_katas/speed_rule.py).
"""

import pytest

from xtc_katas import loop_nests, numerics
from xtc_katas.learner_schedules import apply_spec
from xtc_katas.problems import LARGE, SPLIT, TUTORIAL


def build(kata_entry, backend, function, problem, module):
    """(impl, scheduler) after descript_scheduler applied `module.function()`, checked."""
    return apply_spec(kata_entry, module, function, backend, problem)


def compiled(kata_entry, kata, backend, workdir, function, problem):
    impl, scheduler = build(kata_entry, backend, function, problem, kata)
    return workdir.compile(impl, scheduler.schedule(), stem=function)


def loop_nest(kata_entry, kata, backend, function, problem):
    return build(kata_entry, backend, function, problem, kata)[1].get_loop_nest()


def assert_shape(mistakes, function):
    loop_nests.require(mistakes, "05_descript", function)


def judge_speed(speed_check, kata_entry, kata, backend, workdir, function, problem):
    """Race the learner's kernel against naive, the reference and the previous task's."""
    learner = compiled(kata_entry, kata, backend, workdir, function, problem)
    return speed_check(function, problem, learner)


# --- vectorize_spec: i, k, j and a vector tile of j --------------------------------------


def test_vectorize_spec_computes_the_matmul(kata, kata_entry, backend, workdir):
    module = compiled(kata_entry, kata, backend, workdir, "vectorize_spec", TUTORIAL)
    numerics.assert_computes(module, TUTORIAL, backend.name, kinds=("random", "signed", "edge"))


def test_vectorize_spec_declares_a_stride_1_vector_tile(kata, kata_entry, backend):
    nest = loop_nest(kata_entry, kata, backend, "vectorize_spec", TUTORIAL)
    assert_shape(loop_nests.stride_one(nest) + loop_nests.vector_tile(nest), "vectorize_spec")


@pytest.mark.perf
def test_vectorize_spec_beats_naive(kata, kata_entry, backend, workdir, speed_check):
    judge_speed(speed_check, kata_entry, kata, backend, workdir, "vectorize_spec", TUTORIAL)


# --- register_tile_spec ---------------------------------------------------------------


def test_register_tile_spec_computes_the_matmul(kata, kata_entry, backend, workdir):
    module = compiled(kata_entry, kata, backend, workdir, "register_tile_spec", TUTORIAL)
    numerics.assert_computes(module, TUTORIAL, backend.name, kinds=("random", "signed", "edge"))


def test_register_tile_spec_declares_an_unrolled_tile_inside_k(kata, kata_entry, backend):
    nest = loop_nest(kata_entry, kata, backend, "register_tile_spec", TUTORIAL)
    assert_shape(loop_nests.register_tile(nest), "register_tile_spec")


@pytest.mark.perf
def test_register_tile_spec_beats_the_vectorized_spec(
    kata, kata_entry, backend, workdir, speed_check
):
    judge_speed(speed_check, kata_entry, kata, backend, workdir, "register_tile_spec", TUTORIAL)


# --- split_spec --------------------------------------------------------------------------


def test_split_spec_computes_the_matmul(kata, kata_entry, backend, workdir):
    module = compiled(kata_entry, kata, backend, workdir, "split_spec", SPLIT)
    numerics.assert_computes(module, SPLIT, backend.name, kinds=("random", "signed", "edge"))


def test_split_spec_declares_a_vectorized_main_part(kata, kata_entry, backend):
    nest = loop_nest(kata_entry, kata, backend, "split_spec", SPLIT)
    assert_shape(loop_nests.split_main_part(nest), "split_spec")


@pytest.mark.perf
def test_split_spec_beats_naive(kata, kata_entry, backend, workdir, speed_check):
    judge_speed(speed_check, kata_entry, kata, backend, workdir, "split_spec", SPLIT)


# --- parallel_spec -----------------------------------------------------------------------


def test_parallel_spec_computes_the_matmul(kata, kata_entry, backend, workdir):
    module = compiled(kata_entry, kata, backend, workdir, "parallel_spec", LARGE)
    numerics.assert_computes(module, LARGE, backend.name, kinds=("random", "signed", "edge"))


def test_parallel_spec_declares_a_parallel_outer_loop(kata, kata_entry, backend):
    nest = loop_nest(kata_entry, kata, backend, "parallel_spec", LARGE)
    assert_shape(loop_nests.parallel_outer(nest), "parallel_spec")


@pytest.mark.perf
def test_parallel_spec_beats_naive_on_all_cores(kata, kata_entry, backend, workdir, speed_check):
    judge_speed(speed_check, kata_entry, kata, backend, workdir, "parallel_spec", LARGE)
