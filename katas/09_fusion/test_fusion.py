"""Tests of kata 09, on both backends. `@pytest.mark.task("f")` names the function a test
checks; its `task` fixture builds f's schedule of C = A @ B, R = relu(C), 512x512x16.

Each task is judged three ways: the kernel computes relu(A @ B) (signed and edge inputs,
so that the relu has negatives to clip); its loop nest is one nest, with the relu fused
at a loop outside the reduction and a register tile inside; and, timed side by side in
one run, it is not much slower than the same schedule unfused (xtc_katas/checks/
speed_rule.py: HEADROOM x the reference's own fused/unfused ratio, capped by the manifest).
"""

import pytest

from xtc_katas.checks import loop_nests


def why_fusion_costs(task):
    """The cause a slow fused kernel's nest shows, for the failure's "next:" line."""
    return loop_nests.why_fusion_costs(task.loop_nest(), task.problem)


# --- schedule_fused: the relu inside the matmul's nest ------------------------------------


@pytest.mark.task("schedule_fused")
def test_schedule_fused_computes_the_matmul_and_relu(task):
    task.assert_computes()


@pytest.mark.task("schedule_fused")
def test_schedule_fused_fuses_the_relu_outside_k_around_a_register_tile(task):
    task.assert_shape()


@pytest.mark.perf
@pytest.mark.task("schedule_fused")
def test_schedule_fused_keeps_up_with_itself_unfused(task):
    task.assert_speed(advice=why_fusion_costs(task))


# --- fused_spec: the same, declared ---------------------------------------------------------


@pytest.mark.task("fused_spec")
def test_fused_spec_computes_the_matmul_and_relu(task):
    task.assert_computes()


@pytest.mark.task("fused_spec")
def test_fused_spec_fuses_the_relu_outside_k_around_a_register_tile(task):
    task.assert_shape()


@pytest.mark.perf
@pytest.mark.task("fused_spec")
def test_fused_spec_keeps_up_with_itself_unfused(task):
    task.assert_speed(advice=why_fusion_costs(task))
