"""End to end: what a learner sees, in a subprocess on a temporary copy of the repository."""

import pytest

from xtc_katas.manifest import find
from xtc_katas.selfcheck import copy_repository, edit_stub, run_pytest


@pytest.fixture
def repo(tmp_path):
    return copy_repository(tmp_path)


def test_untouched_stub_fails_with_one_friendly_line_and_no_traceback(repo):
    code, out = run_pytest(repo, "katas/01_peak", "-k", "tutorial_problem")
    assert code == 1
    assert "01_peak › matmul_fmas() is not implemented yet." in out
    assert find(1).task("matmul_fmas").hints[0] in out
    assert "Traceback" not in out and "raise NotImplementedError" not in out


def test_an_error_inside_xtc_shows_xtc_message_first_and_keeps_the_traceback(repo):
    edit_stub(
        repo,
        2,
        '    """A graph named "matmul" computing C = A @ B.',
        "    a = O.tensor((I, K), dtype)\n"
        "    with O.graph(name='matmul') as gb:\n"
        "        O.matmul(a, a, name='C')  # the learner's mistake: A @ A\n"
        "    return gb.graph\n",
    )
    code, out = run_pytest(repo, "katas/02_graph", "-k", "matmul_graph_structure")
    assert code == 1
    header = "02_graph › matmul_graph(): XTC rejected it with AssertionError: incompatible"
    assert header in out
    assert out.index(header) < out.index("operators.py"), "XTC's message, then the traceback"


def test_check_stubs_fails_a_test_that_passes_on_a_stub(repo):
    kata = find(2)
    kata.stub_path(repo).write_text(kata.solution_path(repo).read_text())
    code, out = run_pytest(repo, "katas/02_graph", "--check-stubs", "-k", "structure")
    assert code == 1
    assert "PASSES on the untouched stub" in out


def test_check_stubs_passes_when_every_kata_test_fails_on_its_stub(repo):
    code, out = run_pytest(repo, "katas/01_peak", "katas/02_graph", "--check-stubs", "-q")
    assert code == 0, out


def test_pytest_n_2_runs_the_correctness_tests_and_leaves_perf_out(repo):
    code, out = run_pytest(
        repo, "-n", "2", "--solutions", "katas/03_compile", "katas/04_scheduling"
    )
    assert code == 0, out
    assert "perf tests do not run under pytest -n" in out
    assert " passed" in out
    assert "beats_naive" not in out and "untransformed_loop_nest" not in out, "perf tests ran"
