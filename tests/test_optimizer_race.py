"""Kata 12's race: the cost model, XTC's loop on it, and a verdict random search cannot win."""

import pytest

from xtc_katas.checks import optimizer_race as race
from xtc_katas.kata import loader
from xtc_katas.kata.manifest import find


def test_the_cost_model_peaks_at_its_best_sample_and_falls_with_distance():
    model = race.cost_model(0)
    assert model(list(model.best)) == 1.0
    far = [max(1, v // 8) for v in model.best]
    assert model(far) < 0.5 or far == list(model.best)
    with pytest.raises(ValueError):
        model([1])


def test_drive_spends_the_budget_in_batches():
    run = race.drive(race.random_optimizer(race.sample_fn, 4, 0), race.cost_model(0), 10)
    assert len(run.values) == len(run.samples) == 10
    assert run.best_so_far() == sorted(run.best_so_far())


@pytest.mark.parametrize("offset", [1, 2, 3])
def test_random_search_with_other_seeds_does_not_beat_random_search(offset):
    result = race.race(lambda f, b, s: race.random_optimizer(f, b, s + 1000 * offset))
    assert not result.beats_random, (result.learner_median, result.random_median, result.wins)


def test_the_reference_optimizer_beats_random_search_with_room():
    solution = loader.load(find(12), solution=True)
    result = race.race(solution.make_optimizer)
    assert result.beats_random
    assert result.wins >= race.WINS * len(race.SEEDS) + 3, result.wins
