"""Every problem implements the one `Problem` interface, and the generic paths read it:
a spec on a conv is applied to the conv's node and axes, not to a matmul's."""

import pytest

from xtc_katas.kata.problems import PROBLEMS, RESNET18_02, Problem
from xtc_katas.measure.backends import KataBackend

#: The interface's members: its annotated attributes, and its methods and properties.
MEMBERS = sorted(
    {*Problem.__annotations__}
    | {name for name in vars(Problem) if not name.startswith("_") and name != "dims"}
    | {"dims"}
)


@pytest.mark.parametrize("name", sorted(PROBLEMS))
def test_every_problem_has_every_member_of_the_interface(name):
    problem = PROBLEMS[name]
    missing = [member for member in MEMBERS if not hasattr(problem, member)]
    assert not missing, f"{name}: {missing}"
    assert problem.dims == list(problem.axis_sizes)
    assert set(problem.reduction_axes) <= set(problem.dims)
    assert {problem.vector_axis, *problem.tile_axes} <= set(problem.dims) - set(
        problem.reduction_axes
    )


@pytest.mark.parametrize("name", sorted(PROBLEMS))
@pytest.mark.parametrize("kind", ["random", "signed", "edge"])
def test_the_inputs_are_what_the_problems_kernel_takes(name, kind):
    # XTC checks nothing about the arrays it is given: a wrong dtype, shape or layout
    # gives a wrong answer or a crash, so every problem's inputs are checked here, once.
    problem = PROBLEMS[name]
    inputs = problem.inputs(kind)
    assert [x.shape for x in inputs] == [tuple(s) for s in problem.input_shapes]
    assert all(x.dtype == problem.dtype and x.flags.c_contiguous for x in inputs)


def test_a_spec_is_applied_to_the_problems_own_node_and_axes():
    from xtc_katas.checks.schedule import ScheduleMistake, schedule_spec

    spec = {axis: {} for axis in RESNET18_02.dims}
    _, scheduler = schedule_spec("11_conv", spec, "spec()", KataBackend("mlir"), RESNET18_02)
    assert list(scheduler.get_loop_nest().abstract_dims) == RESNET18_02.dims
    # the conv's reductions are r, s, c: vectorizing c is named as a race
    spec = {**{a: {} for a in RESNET18_02.dims[:-1]}, "c": {"vectorize": True}}
    with pytest.raises(ScheduleMistake, match="iterates the reduction axis 'c'"):
        schedule_spec("11_conv", spec, "spec()", KataBackend("mlir"), RESNET18_02)
