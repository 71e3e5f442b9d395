"""SpeedCheck re-races a near miss and fails a slow kernel at once (speed_race.py)."""

import pytest

from xtc_katas.checks import speed_race
from xtc_katas.kata.manifest import find
from xtc_katas.kata.problems import TUTORIAL
from xtc_katas.measure.backends import KataBackend
from xtc_katas.measure.speed_rule import Race, SpeedBelowBar


class Typical:
    def typical(self, name):
        return 1e-5


def check(monkeypatch, learner_readings):
    """A SpeedCheck whose races read `learner_readings` in turn (reference 50x); returns
    (the check, how many races ran, what it recorded)."""
    races = iter(Race(learner=x, reference=50.0) for x in learner_readings)
    timed = []
    monkeypatch.setattr(speed_race, "race_kernels", lambda *a, **k: ({}, lambda t: next(races)))
    monkeypatch.setattr(
        speed_race, "time_side_by_side", lambda modules, problem: timed.append(1) or Typical()
    )
    recorded = {}
    speed_check = speed_race.SpeedCheck(
        find(4), KataBackend("tvm"), None, lambda: 5e10, recorded.update
    )
    return speed_check, timed, recorded


def test_a_near_miss_is_raced_again_and_passes_when_one_race_clears_the_bar(monkeypatch):
    # bar: min(cap 38, 0.7 x 50 = 35) = 35. A copy of the reference read 0.6x of it once.
    speed_check, timed, recorded = check(monkeypatch, [21.0, 40.0, 99.0])
    speed_check("schedule_register_tile", TUTORIAL, learner=None)
    assert len(timed) == 2 and recorded["races"] == 2 and recorded["speedup"] == 40.0


def test_a_slow_kernel_fails_after_one_race(monkeypatch):
    speed_check, timed, _ = check(monkeypatch, [10.0, 40.0])
    with pytest.raises(SpeedBelowBar):
        speed_check("schedule_register_tile", TUTORIAL, learner=None)
    assert len(timed) == 1


def test_three_near_misses_fail_and_the_message_lists_them(monkeypatch):
    speed_check, timed, _ = check(monkeypatch, [30.0, 31.0, 29.0, 40.0])
    with pytest.raises(SpeedBelowBar, match="yours in 3 races: 30x, 31x, 29x"):
        speed_check("schedule_register_tile", TUTORIAL, learner=None)
    assert len(timed) == speed_race.RACES


def test_a_slow_kernel_is_not_advised_about_the_other_backend():
    # Learner review: kata 11's parallel conv on TVM was told about MLIR's parallel body.
    kata = find("11")
    hints = kata.task("schedule_conv_parallel").hints
    assert hints[-1].startswith("On MLIR")
    assert speed_race.speed_hint(hints, "mlir") == hints[-1]
    tvm = speed_race.speed_hint(hints, "tvm")
    assert not tvm.startswith("On MLIR") and "parallelize" in tvm
