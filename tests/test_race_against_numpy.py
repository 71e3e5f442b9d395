"""Kata 08's race against numpy, judged on measured figures: the harness reads the times
a race measured (here planted, no kernel runs and nothing is timed) into the learner's
and the reference's ratios to numpy, and applies speed_rule.py's bar to them."""

import contextlib
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import ClassVar

import numpy as np
import pytest

from xtc_katas.checks import race_against_numpy
from xtc_katas.kata.failures import KataFailure
from xtc_katas.kata.manifest import find
from xtc_katas.kata.problems import TUTORIAL
from xtc_katas.measure.backends import KataBackend
from xtc_katas.measure.timing import CALLS, NUMPY_ROUNDS

KATA = find(8)
#: numpy's time per call, every call: the race's yardstick.
NUMPY_S = 0.010


@dataclass
class PlantedRace:
    """timing.NumpyRace with its XTC times planted: each kernel's per-round time."""

    modules: dict
    problem: object
    threads: int
    numpy: list = field(default_factory=list)
    #: Each kernel's time per round, by name: what the race "measures".
    planted: ClassVar[dict[str, float]] = {}

    def __post_init__(self):
        self.inputs = self.problem.inputs("random")
        self.out = np.empty(self.problem.output_shape, dtype=self.problem.dtype)
        self.xtc = {name: [] for name in self.modules}

    def xtc_round(self):
        for name in self.modules:
            self.xtc[name].append(PlantedRace.planted[name])

    ratio = race_against_numpy.NumpyRace.ratio
    relative = race_against_numpy.NumpyRace.relative
    best = race_against_numpy.NumpyRace.best


class PlantedBenchmark:
    """pytest-benchmark's fixture as the race uses it: numpy's calls 'take' NUMPY_S."""

    disabled = False

    def __init__(self):
        self.extra_info = {}
        self.stats = SimpleNamespace(stats=SimpleNamespace(data=[]))

    def pedantic(self, function, args, setup, rounds):
        for _ in range(rounds):
            setup()
            function(*args)
            self.stats.stats.data.append(NUMPY_S)


def judged(monkeypatch, learner_s, reference_s, backend="tvm"):
    """The race's verdict when numpy takes NUMPY_S, the reference `reference_s` and the
    learner's kernel `learner_s` per call, in every round."""
    monkeypatch.setattr(PlantedRace, "planted", {"learner": learner_s, "reference": reference_s})
    monkeypatch.setattr(race_against_numpy, "NumpyRace", PlantedRace)
    monkeypatch.setattr(
        race_against_numpy,
        "reference_of",
        lambda under_test: SimpleNamespace(compiled=lambda: "ref"),
    )
    benchmark = PlantedBenchmark()
    recorded = {}
    fixtures = {"benchmark": benchmark}
    monkeypatch.setattr(race_against_numpy, "uncaptured", lambda fixture: contextlib.nullcontext())
    under_test = SimpleNamespace(
        kata=KATA,
        function="schedule_large",
        task=KATA.task("schedule_large"),
        backend=KataBackend(backend),
        problem=TUTORIAL,
        threads=1,
        fixture=fixtures.__getitem__,
        workdir=None,
        compiled=lambda: "learner",
        speed_judge=SimpleNamespace(peak=lambda: 1e11, record_perf=recorded.update),
    )
    bar = race_against_numpy.assert_keeps_up_with_numpy(under_test, "")
    return bar, recorded, benchmark


def test_a_kernel_as_fast_as_numpy_is_gold_and_passes(monkeypatch):
    bar, recorded, benchmark = judged(monkeypatch, learner_s=NUMPY_S, reference_s=NUMPY_S)
    assert recorded["speedup_vs_numpy"] == pytest.approx(1.0)
    assert recorded["tier"].startswith("gold")
    assert bar.value == pytest.approx(KATA.cap("schedule_large", "tvm"))
    assert benchmark.extra_info["threads"] == 1
    assert len(benchmark.stats.stats.data) == NUMPY_ROUNDS * CALLS


def test_the_learner_is_read_against_the_reference_round_by_round(monkeypatch):
    # The reference at 0.8x numpy, the learner at 0.75 of the reference's speed: 0.6x,
    # above the bar of 0.7 x 0.8 = 0.56x.
    bar, recorded, _ = judged(monkeypatch, learner_s=NUMPY_S / 0.6, reference_s=NUMPY_S / 0.8)
    assert recorded["reference_vs_numpy"] == pytest.approx(0.8)
    assert recorded["speedup_vs_numpy"] == pytest.approx(0.6)
    assert bar.value == pytest.approx(0.56)
    assert recorded["tier"] == "bronze"


def test_a_kernel_below_the_bar_fails_with_the_figures_and_the_next_step(monkeypatch):
    cap = KATA.cap("schedule_large", "tvm")
    with pytest.raises(KataFailure) as failure:
        judged(monkeypatch, learner_s=NUMPY_S / (0.5 * cap), reference_s=NUMPY_S)
    message = str(failure.value)
    assert "08_large_matmul › schedule_large()" in message
    assert "numpy's speed on tvm with 1 thread(s)" in message
    assert "more hints: xtc-katas hint 8 schedule_large" in message
    assert "your tier:" in message


def test_a_disabled_benchmark_says_how_to_run_the_race(monkeypatch):
    monkeypatch.setattr(PlantedBenchmark, "disabled", True)
    with pytest.raises(KataFailure, match="pytest-benchmark, which is disabled"):
        judged(monkeypatch, learner_s=NUMPY_S, reference_s=NUMPY_S)
