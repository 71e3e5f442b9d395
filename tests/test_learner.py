"""The learner's module lives behind one process boundary (checks/learner.py): what it
changes there changes no verdict, and what it sends back is plain data only.

The attacks are a learner reviewer's, kept as they were written: each passed every test of
its kata when the learner's module ran in the judge's process, without doing the task.
Each is appended to its kata's stub in a copy of the repository, so its definitions
replace the stub's, as a learner's edit would; each now changes only the learner's own
process, and fails as the stub it leaves would.
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass

import pytest

from tools.copy_runs import run_python
from xtc_katas.checks import speed_rule
from xtc_katas.checks.learner import Learner
from xtc_katas.grade.repo_copy import copy_repository, learner_env
from xtc_katas.kata.failures import KataFailure
from xtc_katas.kata.manifest import find
from xtc_katas.measure.isolation import KernelCrashed, NotPlainData

FUSED = """
def schedule_fused(sch):
    sch.strip_mine("i", {"i1": 4}); sch.strip_mine("j", {"j1": 16})
    sch.interchange(["i", "j", "k", "i1", "j1"]); sch.unroll({"i1": 4}); sch.vectorize(["j1"])
    sch.fuse_consumer_at("j")
def fused_spec():
    return {"i": {}, "j": {"fuse_consumer": True}, "k": {}, "i#4": {"unroll": True},
            "j#16": {"vectorize": True}}
"""
RANDOM_SEARCH = """
import random
from xtc.itf.search.optimizer import Optimizer
class R(Optimizer):
    def __init__(self, f, batch, seed):
        self.f, self.batch, self.rng = f, batch, random.Random(seed)
    def suggest(self):
        return [list(s) for s in self.f(self.batch, self.rng.randrange(2**31))]
    def observe(self, x, y): pass
    def finished(self): pass
def make_optimizer(sample_fn, batch, seed): return R(sample_fn, batch, seed)
"""


@dataclass(frozen=True)
class Attack:
    name: str
    kata: int
    code: str
    select: str
    failure: str  # what the failure says: the answer's own fault


ATTACKS = [
    Attack(
        "the task fixture's judgements",
        9,
        "import importlib\n"
        '_t = importlib.import_module("xtc_katas" + ".checks.task_under_test").TaskUnderTest\n'
        "_t.assert_computes = lambda self: None\n"
        "_t.assert_shape = lambda self, mistakes: None\n"
        '_t.assert_speed = lambda self, advice="": None\n'
        "def schedule_fused(sch): pass\n"
        'def fused_spec(): return {"i": {}, "j": {}, "k": {}}\n',
        "fused",
        "fuses nothing",
    ),
    Attack(
        "the optimizer race's verdict",
        12,
        "import importlib\n"
        'importlib.import_module("xtc_katas" + ".checks.optimizer_race").OptimizerRace.verdict = '
        "lambda self: None\n" + RANDOM_SEARCH,
        "learns_and_beats",
        "RandomOptimizer",
    ),
    Attack(
        "the race's secret",
        12,
        "import secrets as _secrets\n_secrets.randbits = lambda k: 0\n" + RANDOM_SEARCH,
        "learns_and_beats",
        "RandomOptimizer",
    ),
    Attack(
        "the module cache's store",
        10,
        "import importlib\n"
        '_mc = importlib.import_module("xtc_katas" + ".measure.module_cache")\n'
        "_orig = _mc.compile_cached\n"
        "def _poisoned(key, graph, fresh_path, build):\n"
        "    return _orig(key, graph, fresh_path, build)\n"
        "_mc.compile_cached = _poisoned\n",
        "gemm_write_cache",
        "gemm_write_cache() is not implemented yet",
    ),
]


@pytest.mark.slow
@pytest.mark.parametrize("attack", ATTACKS, ids=[a.name for a in ATTACKS])
def test_a_module_that_changes_the_judges_fails_as_its_answer_does(tmp_path, attack):
    repo = copy_repository(tmp_path)
    stub = find(attack.kata).stub_path(repo)
    stub.write_text(stub.read_text() + "\n# ---- the learner's attempt ----\n" + attack.code)
    cache = tmp_path / "cache"
    code, out = run_python(
        repo,
        "-m",
        "pytest",
        f"katas/{find(attack.kata).id}",
        "-k",
        attack.select,
        env=learner_env(XTC_KATAS_CACHE_DIR=str(cache)),
        timeout=600,
    )
    assert code == 1, out
    assert not re.search(r"\b\d+ passed\b", out), out
    assert attack.failure in out, out


@pytest.mark.slow
@pytest.mark.perf  # kata 04's speed race runs in the copy
def test_the_rest_of_the_run_is_judged_by_the_harness_as_it_was(tmp_path):
    """Kata 09's module lowers the speed rule's headroom at import (in its own process);
    kata 04's solved register tile, tested after it in the same run, is raced against the
    real bar."""
    repo = copy_repository(tmp_path)
    fusion = find(9).stub_path(repo)
    headroom = (
        "import importlib\n"
        'importlib.import_module("xtc_katas" + ".checks.speed_rule").HEADROOM = 0.01\n'
    )
    fusion.write_text(fusion.read_text() + "\n" + headroom + FUSED)
    shutil.copyfile(find(4).solution_path(repo), find(4).stub_path(repo))
    _code, out = run_python(
        repo,
        "-m",
        "pytest",
        "katas/09_fusion",
        "katas/04_scheduling",
        "-k",
        "fused or schedule_register_tile",
        "--backend",
        "mlir",
        "-v",  # the instructor's summary: every figure, the cap too
        timeout=600,
    )
    assert "passed" in out, out
    figures = re.search(
        r"test_schedule_register_tile_keeps_up\S*\[mlir\]: speedup \S+, percent_of_peak \S+, "
        r"reference_speedup ([\d.]+), previous_speedup [\d.]+, cap ([\d.]+), bar ([\d.]+)",
        out,
    )
    assert figures, out
    reference, cap, bar = map(float, figures.groups())
    assert bar >= 0.99 * min(cap, speed_rule.HEADROOM * reference), out


def test_what_the_learners_process_changes_stays_there():
    headroom = speed_rule.HEADROOM
    with Learner(find(9), solution=True) as learner:
        learner.run(_lower_headroom)
        assert learner.run(_headroom) == 0.01
    assert speed_rule.HEADROOM == headroom


def _lower_headroom(module):
    speed_rule.HEADROOM = 0.01


def _headroom(module):
    return speed_rule.HEADROOM


def _gives_back(module, what):
    if what == "a class of its own":
        return type("Mine", (), {})()
    if what == "a function":
        return print
    if what == "sys.exit":
        raise SystemExit(3)
    os._exit(4)


@pytest.mark.parametrize(
    "what, refused, words",
    [
        ("a class of its own", NotPlainData, "not a class or function of your own"),
        ("a function", NotPlainData, "builtins.print is not plain data"),
        ("sys.exit", KataFailure, "called sys.exit(3)"),
        ("os._exit", KernelCrashed, "ended its process (exit code 4)"),
    ],
)
def test_only_plain_data_comes_back_and_an_exit_is_named(what, refused, words):
    with Learner(find(9), solution=True) as learner:
        with pytest.raises(refused, match=re.escape(words)):
            learner.run(_gives_back, what)
        assert learner.run(_headroom) == speed_rule.HEADROOM, "a new worker, if needed"
