"""A learner's module that reads the reference or the harness's judges is refused.

Learner review (issue 20): importing the reference solution, or kata 12's hidden cost
model, passed every test: the tests then judged the reference or the judge itself.
"""

import os

import pytest

from xtc_katas.kata import loader
from xtc_katas.kata.manifest import find

READS = {
    "the reference, imported": "from solutions import x\n",
    "the reference, by path": "import runpy\nM = runpy.run_path('solutions/10_gemm/gemm.py')\n",
    "the cost model of kata 12": "from xtc_katas.checks.optimizer_race import cost_model\n",
    "a judge, by name": "import importlib\nimportlib.import_module('xtc_katas.checks.search')\n",
    "the loader": "from xtc_katas.kata import loader\n",
    # Learner review: a bar's constant, lowered at import, passed every test of kata 09.
    "the speed rule": "import xtc_katas.checks.speed_rule as rule\nrule.HEADROOM = 0.01\n",
    "the module cache": "from xtc_katas.measure import module_cache\n",
    "the plugin, by name": "import importlib\nimportlib.import_module('xtc_katas.plugin')\n",
}
FINE = {
    "XTC and numpy": "import numpy as np\nfrom xtc.search.strategies import Strategy_PPRPRPvr\n",
    "the word in a docstring": '"""Several solutions exist; this is mine."""\n',
    "the harness's problems": "from xtc_katas.kata.problems import CHALLENGE\n",
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
    with pytest.raises(loader.ReadsTheReference) as refused:
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
