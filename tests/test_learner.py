"""A learner's module that changes the judges fails, named, and the run goes on judged by the
real harness (checks/integrity.py).

The attacks are a learner reviewer's, kept as they were written (Intel Xeon family 6 model
167, XTC 0.3.2): each passed every test of its kata before the tripwire, without doing the
task. Each is appended to its kata's stub in a copy of the repository, so its definitions
replace the stub's, as a learner's edit would.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass

import pytest

from xtc_katas.checks import integrity, speed_rule
from xtc_katas.kata.manifest import find
from xtc_katas.tools.repo_copy import copy_repository, learner_env, run_python

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
    changed: str  # what the failure must name


ATTACKS = [
    Attack(
        "the speed rule's headroom",
        9,
        # the reviewer's `import xtc_katas.checks.speed_rule` is refused by name (loader.py,
        # tests/test_loader.py); through sys.modules it reaches the module
        'import sys\nsys.modules["xtc_katas" + ".checks.speed_rule"].HEADROOM = 0.01\n' + FUSED,
        "fused",
        "xtc_katas.checks.speed_rule.HEADROOM",
    ),
    Attack(
        "the task fixture's judgements",
        9,
        "import sys\n"
        '_t = sys.modules["xtc_katas" + ".checks.task_under_test"].TaskUnderTest\n'
        "_t.assert_computes = lambda self: None\n"
        "_t.assert_shape = lambda self, mistakes: None\n"
        '_t.assert_speed = lambda self, advice="": None\n'
        "def schedule_fused(sch): pass\n"
        'def fused_spec(): return {"i": {}, "j": {}, "k": {}}\n',
        "fused",
        "xtc_katas.checks.task_under_test.TaskUnderTest.assert_computes",
    ),
    Attack(
        "the optimizer race's verdict",
        12,
        "import sys\n"
        'sys.modules["xtc_katas" + ".checks.optimizer_race"].OptimizerRace.verdict = '
        "lambda self: None\n" + RANDOM_SEARCH,
        "make_optimizer and not exploration",
        "xtc_katas.checks.optimizer_race.OptimizerRace.verdict",
    ),
    Attack(
        "the race's secret",
        12,
        "import secrets as _secrets\n_secrets.randbits = lambda k: 0\n" + RANDOM_SEARCH,
        "make_optimizer and not exploration",
        "secrets.randbits",
    ),
    Attack(
        "the module cache's store",
        10,
        "import sys\n"
        '_mc = sys.modules["xtc_katas" + ".measure.module_cache"]\n'
        "_orig = _mc.compile_cached\n"
        "def _poisoned(key, graph, fresh_path, build):\n"
        "    return _orig(key, graph, fresh_path, build)\n"
        "_mc.compile_cached = _poisoned\n",
        "gemm_write_cache",
        "xtc_katas.measure.module_cache.compile_cached",
    ),
]


@pytest.mark.slow
@pytest.mark.parametrize("attack", ATTACKS, ids=[a.name for a in ATTACKS])
def test_a_module_that_changes_the_judges_fails_every_test_naming_the_change(tmp_path, attack):
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
    assert "your code changed the harness that judges it" in out, out
    assert attack.changed in out, out
    assert not list(cache.glob("*/*/module.so")), "a changed harness left cached kernels"


@pytest.mark.slow
@pytest.mark.perf  # kata 04's speed race runs in the copy
def test_the_rest_of_the_run_is_judged_by_the_harness_as_it_was(tmp_path):
    """Kata 09's module lowers the speed rule's headroom at import; kata 04's solved
    register tile, tested after it in the same run, is raced against the real bar."""
    repo = copy_repository(tmp_path)
    fusion = find(9).stub_path(repo)
    fusion.write_text(fusion.read_text() + "\n" + ATTACKS[0].code)
    shutil.copyfile(find(4).solution_path(repo), find(4).stub_path(repo))
    code, out = run_python(
        repo,
        "-m",
        "pytest",
        "katas/09_fusion",
        "katas/04_scheduling",
        "-k",
        "fused or schedule_register_tile",
        "--backend",
        "mlir",
        timeout=600,
    )
    assert code == 1, out
    assert "passed" in out and "xtc_katas.checks.speed_rule.HEADROOM" in out, out
    figures = re.search(
        r"test_schedule_register_tile_keeps_up\S*\[mlir\]: speedup \S+, percent_of_peak \S+, "
        r"reference_speedup ([\d.]+), previous_speedup [\d.]+, cap ([\d.]+), bar ([\d.]+)",
        out,
    )
    assert figures, out
    reference, cap, bar = map(float, figures.groups())
    assert bar >= 0.99 * min(cap, speed_rule.HEADROOM * reference), out


def test_a_rebound_judge_is_named_and_put_back(monkeypatch):
    monkeypatch.setattr(integrity, "_SNAPSHOT", [])
    integrity.watch()
    real = speed_rule.HEADROOM
    speed_rule.HEADROOM = 0.01
    try:
        with pytest.raises(integrity.HarnessChanged, match=r"speed_rule\.HEADROOM") as caught:
            integrity.verify("09_fusion: importing fusion.py")
    finally:
        restored = speed_rule.HEADROOM
        speed_rule.HEADROOM = real
    assert restored == real
    assert str(caught.value).startswith("09_fusion: importing fusion.py: your code changed")
    integrity.verify("nothing changed since")  # no error once put back
