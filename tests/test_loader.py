"""A learner's module that reads the reference is refused: the tests would judge the
reference (learner review, issue 20). The harness is not off limits: the learner's module
runs in a worker process of its own (checks/learner.py; tests/test_learner_boundary.py),
where reading or changing it changes no verdict.
"""

import os

import pytest

from xtc_katas.kata import loader
from xtc_katas.kata.failures import KataFailure
from xtc_katas.kata.manifest import find

READS = {
    "the reference, imported": "from solutions import x\n",
    "the reference, by path": "import runpy\nM = runpy.run_path('solutions/10_gemm/gemm.py')\n",
}
FINE = {
    "XTC and numpy": "import numpy as np\nfrom xtc.search.strategies import Strategy_PPRPRPvr\n",
    "the word in a docstring": '"""Several solutions exist; this is mine."""\n',
    "the harness's problems": "from xtc_katas.kata.problems import CHALLENGE\n",
    "a judge, by name": "import importlib\nimportlib.import_module('xtc_katas.checks.search')\n",
    "the speed rule": "import xtc_katas.checks.speed_rule as rule\nrule.HEADROOM = 0.01\n",
    "the harness's helpers, as kata 08's reference uses them": (
        "from xtc_katas.measure import timing\n"
        "from xtc_katas.measure.workdir import Workdir\n"
        "import importlib\nT = importlib.import_module('xtc_katas.measure.timing')\n"
    ),
}


@pytest.mark.parametrize("name", sorted(READS))
def test_a_module_that_reads_the_reference_is_refused(tmp_path, name):
    stub = tmp_path / "gemm.py"
    stub.write_text(READS[name])
    assert loader.reference_reads(stub), name


@pytest.mark.parametrize("name", sorted(FINE))
def test_a_module_of_its_own_is_loaded(tmp_path, name):
    stub = tmp_path / "gemm.py"
    stub.write_text(FINE[name])
    assert loader.reference_reads(stub) == [], name


def test_the_refusal_names_the_kata_the_line_and_the_fix(tmp_path):
    kata = find("10")
    root = tmp_path
    stub = kata.stub_path(root)
    stub.parent.mkdir(parents=True)
    stub.write_text("def gemm_blocking(sch):\n    from solutions import x\n")
    with pytest.raises(KataFailure) as refused:
        loader.load(kata, solution=False, root=root)
    text = str(refused.value)
    assert text.startswith("10_gemm: gemm.py reads what the tests judge you against")
    assert "line 2: 'solutions.x'" in text and "write your own" in text


def test_no_stub_and_no_solution_reads_the_reference():
    from xtc_katas.kata.manifest import katas

    for kata in katas():
        assert loader.reference_reads(kata.stub_path()) == [], kata.id
        assert loader.reference_reads(kata.solution_path()) == [], kata.id


def test_a_save_that_keeps_the_size_and_the_second_runs_the_new_code(tmp_path, monkeypatch):
    # Python reuses a __pycache__ file while its source keeps the size and the mtime
    # second: a learner's quick save in `watch` would then run the old code.
    monkeypatch.setattr("sys.dont_write_bytecode", False)
    kata = find("10")
    stub = kata.stub_path(tmp_path)
    stub.parent.mkdir(parents=True)
    stub.write_text("def gemm_blocking(sch):\n    return 4\n")
    stamp = stub.stat().st_mtime_ns
    assert loader.load(kata, solution=False, root=tmp_path).gemm_blocking(None) == 4
    stub.write_text("def gemm_blocking(sch):\n    return 8\n")
    os.utime(stub, ns=(stamp, stamp))
    assert loader.load(kata, solution=False, root=tmp_path).gemm_blocking(None) == 8
