"""The speed judge re-races a near miss and fails a slow kernel at once, and stops a race
early only where its verdict is settled (speed_judge.py)."""

import contextlib
import dataclasses
import itertools
import os
import statistics
import types
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from xtc_katas.checks import speed_judge
from xtc_katas.checks.speed_rule import HEADROOM, SpeedBelowBar, Speedups, step_pays
from xtc_katas.checks.task_under_test import TaskUnderTest, reference_learner
from xtc_katas.kata.manifest import find
from xtc_katas.kata.problems import TUTORIAL
from xtc_katas.measure import timing
from xtc_katas.measure.backends import KataBackend


class Typical:
    @property
    def rounds(self):
        return {"naive": [], "learner": [], "reference": []}

    def typical(self, name):
        return 1e-5


def judged(function, peak=lambda: 5e10, record=lambda **figures: None):
    """Kata 04's task `function` on TVM, for a judge whose races are planted."""
    kata = find(4)
    return TaskUnderTest(kata, kata.task(function), None, KataBackend("tvm"), None, peak, record)


def check(monkeypatch, learner_readings):
    """A task whose races read `learner_readings` in turn (reference 50x); returns (the
    task, how many races ran, what it recorded)."""
    races = iter(Speedups(learner=x, reference=50.0) for x in learner_readings)
    timed = []
    monkeypatch.setattr(TaskUnderTest, "race_kernels", lambda *a: {})
    monkeypatch.setattr(TaskUnderTest, "speed_advice", lambda task: "the next step")
    monkeypatch.setattr(TaskUnderTest, "shape_mistakes", lambda task: [])  # planted: no nest
    monkeypatch.setattr(speed_judge, "speedups", lambda t: next(races))
    monkeypatch.setattr(
        speed_judge,
        "time_side_by_side",
        lambda modules, problem, settled, **k: timed.append(1) or Typical(),  # early stop given
    )
    recorded = {}
    return judged("schedule_register_tile", record=recorded.update), timed, recorded


def test_a_near_miss_is_raced_again_and_passes_when_one_race_clears_the_bar(monkeypatch):
    # bar: min(cap 38, HEADROOM x 50 = 35) = 35. A copy of the reference read 0.6x of it once.
    task, timed, recorded = check(monkeypatch, [21.0, 40.0, 99.0])
    task.assert_speed()
    assert len(timed) == 2 and recorded["races"] == 2 and recorded["speedup"] == 40.0


def test_a_slow_kernel_fails_after_one_race(monkeypatch):
    task, timed, _ = check(monkeypatch, [10.0, 40.0])
    with pytest.raises(SpeedBelowBar):
        task.assert_speed()
    assert len(timed) == 1


def test_three_near_misses_fail_and_the_message_lists_them(monkeypatch):
    task, timed, _ = check(monkeypatch, [30.0, 31.0, 29.0, 40.0])
    with pytest.raises(SpeedBelowBar, match="yours in 3 races: 30x, 31x, 29x"):
        task.assert_speed()
    assert len(timed) == speed_judge.RACES


def two_row_tile(sch):
    sch.strip_mine("i", {"i1": 2})
    sch.strip_mine("j", {"j1": 16})
    sch.interchange(["i", "j", "k", "i1", "j1"])
    sch.parallelize(["i"])
    sch.unroll({"i1": 2})
    sch.vectorize(["j1"])


def test_a_slow_kernels_next_line_reads_its_own_loop_nest():
    # Learner review: a 2-row tile, its outer loop parallel, was told "Parallelize the
    # outermost loop" (the task's last hint).
    kata, tvm = find(4), KataBackend("tvm")
    mine = types.SimpleNamespace(schedule_parallel=two_row_tile)
    slow = TaskUnderTest.of_module(kata, "schedule_parallel", mine, tvm)
    # Issue 50: the shape test tells the mistake; the speed test points at it, not twice.
    assert slow.speed_advice() == (
        "your loop nest lacks this step's shape, which this task's shape test tells: "
        "pytest katas/04_scheduling -k schedule_parallel"
    )
    assert any("the loops over 'i' outside" in m for m in slow.shape_mistakes())
    right = TaskUnderTest(kata, kata.task("schedule_parallel"), reference_learner(kata), tvm, None)
    assert "--nest --diff" in right.speed_advice()
    # A task with no shape checks (kata 08's) is told the same diff, not a LookupError.
    large = TaskUnderTest(find(8), find(8).tasks[0], reference_learner(find(8)), tvm, None)
    assert large.speed_advice().startswith("yours runs slower than the reference")


# --- a race stops early only where its verdict is settled ----------------------------------


def outcome(race: Speedups, cap) -> tuple[int, bool]:
    """What the judge does with a race: pass (2), race again (1), fail (0); the note."""
    value = speed_judge.bar(race, cap).value
    standing = 2 if race.learner >= value else 1 if race.learner >= 0.5 * value else 0
    return standing, step_pays(race)


seconds = st.floats(1e-4, 1e-1)
#: A kernel's rounds: one time, each round off it by a factor of up to 1.4 either way, as
#: on a noisy machine (independent draws of every round would rarely settle a race early,
#: and the property would be checked on few races).
kernel_rounds = st.builds(
    lambda base, noise: [base * factor for factor in noise],
    seconds,
    st.lists(st.floats(1 / 1.4, 1.4), min_size=timing.ROUNDS, max_size=timing.ROUNDS),
)


@settings(max_examples=400, deadline=None)
@given(
    naive=kernel_rounds,
    learner=kernel_rounds,
    reference=kernel_rounds,
    previous=kernel_rounds,
    cap=st.none() | st.floats(1, 1000),
)
def test_a_race_settled_early_gets_the_verdict_of_all_its_rounds(
    naive, learner, reference, previous, cap
):
    rounds = {"naive": naive, "learner": learner, "reference": reference, "previous": previous}
    assert_settled_races_keep_their_verdict(rounds, cap)


def assert_settled_races_keep_their_verdict(rounds, cap):
    """Every prefix of `rounds` that `settled` calls settled reads the full race's outcome."""
    read = speed_judge.speedups
    full = timing.Timings(rounds=rounds, planned=timing.ROUNDS)
    settled = speed_judge.settled(cap)
    for done in range(timing.MIN_ROUNDS, timing.ROUNDS):
        early = timing.Timings(
            rounds={name: times[:done] for name, times in rounds.items()}, planned=timing.ROUNDS
        )
        if settled(early):
            assert outcome(read(early), cap) == outcome(read(full), cap)


@settings(max_examples=400, deadline=None)
@given(
    learner_unfused=kernel_rounds,
    learner=kernel_rounds,
    reference_unfused=kernel_rounds,
    reference=kernel_rounds,
    cap=st.none() | st.floats(1, 1000),
)
def test_a_race_against_unfused_twins_settled_early_gets_the_verdict_of_all_its_rounds(
    learner_unfused, learner, reference_unfused, reference, cap
):
    rounds = {
        "learner_unfused": learner_unfused,
        "learner": learner,
        "reference_unfused": reference_unfused,
        "reference": reference,
    }
    assert_settled_races_keep_their_verdict(rounds, cap)


class Kernel:
    """A compiled module whose calls take `seconds` in turn (XTC's evaluator protocol)."""

    def __init__(self, *seconds: float) -> None:
        self.seconds = seconds
        self.calls = 0
        self.evaluators: list[tuple[int, int]] = []  # (number, repeat) of each made

    def get_evaluator(self, **options):
        self.evaluators.append((options.get("number"), options.get("repeat")))
        return self

    def evaluate(self):
        self.calls += 1
        return [self.seconds[self.calls % len(self.seconds)]], 0, ""


@pytest.mark.parametrize(
    ("learner_s", "rounds"),
    [((0.001, 0.0012), timing.MIN_ROUNDS), ((0.006,) * 3 + (0.008,) * 3, timing.ROUNDS)],
    ids=["clear pass: stops", "either side of the bar: every round"],
)
def test_a_race_stops_once_settled_and_not_before(learner_s, rounds):
    # naive 0.1 s (a slow kernel: timed every SLOW_EVERY rounds), reference 5 ms (20x):
    # the bar is 14x. Rounds of 100x and 83x pass whatever comes next; rounds of 12.5x
    # and 16.7x in turn, the slower first, leave the verdict open to the last (the learner
    # near the bar is the reference's twin, timed 3 samples a round in alternation with
    # it: its calls cycle over 6 so that each round's best is 8 ms, then 6 ms, in turn).
    from xtc_katas.kata.problems import TUTORIAL

    modules = {"naive": Kernel(0.1), "learner": Kernel(*learner_s), "reference": Kernel(0.005)}
    inputs = TUTORIAL.inputs("random", seed=0)
    timings = timing._time_interleaved(
        modules,
        TUTORIAL,
        inputs,
        timing.ROUNDS,
        2,
        None,
        speed_judge.settled(None),
    )
    assert len(timings.rounds["learner"]) == rounds
    assert statistics.median(timings.rounds["naive"]) == 0.1


def test_twins_are_sampled_alike_whatever_their_estimates_read():
    # Under a CPU hog two compiles of kata 10's TVM parallel reference read 8.2 ms and
    # 10.5 ms once each, either side of SLOW_CALL_S: planned one by one, one took 3 samples
    # a round and its twin one sample every 4 rounds (AMD EPYC family 23 model 1).
    plans = timing.plan_samples({"naive": 0.6, "learner": 0.0082, "reference": 0.0105})
    assert plans["learner"] == plans["reference"]
    assert plans["learner"].every == 1
    assert plans["naive"] == timing.Plan(0, 1, timing.SLOW_EVERY)  # the baseline: sparse


def test_two_slow_kernels_that_are_compared_are_timed_in_every_round():
    # kata 11's MLIR parallel conv and its copy, ~10 ms each under a hog, naive 30 ms.
    plans = timing.plan_samples({"naive": 0.04, "learner": 0.0121, "reference": 0.0105})
    assert plans["learner"] == plans["reference"] == timing.Plan(0, 2)
    assert plans["naive"].every == timing.SLOW_EVERY  # more than TWINS times slower
    # kata 10's MLIR blockings, ~200 ms each, naive 600 ms (within TWINS of them): the
    # baseline is planned alone, sparse; the two it divides, every round
    plans = timing.plan_samples({"naive": 0.6, "learner": 0.21, "reference": 0.19})
    assert plans["learner"] == plans["reference"] == timing.Plan(0, 1)
    assert plans["naive"] == timing.Plan(0, 1, timing.SLOW_EVERY)


def test_a_slow_kernel_alone_in_its_group_is_timed_sparsely():
    # A learner's kernel at naive's speed is far from the reference's bar whatever its
    # few readings say; timing it every round would triple a failing race's time.
    plans = timing.plan_samples({"naive": 0.6, "learner": 0.5, "reference": 0.005})
    assert plans["learner"].every == plans["naive"].every == timing.SLOW_EVERY
    assert plans["reference"] == timing.Plan(1, 5)


def test_a_race_reads_every_compared_kernel_in_every_round_in_alternation():
    calls = []

    class Logged(Kernel):
        def evaluate(self):
            calls.append(self)
            return super().evaluate()

    modules = {"naive": Logged(0.1), "learner": Logged(0.011), "reference": Logged(0.009)}
    inputs = TUTORIAL.inputs("random", seed=0)
    timings = timing._time_interleaved(modules, TUTORIAL, inputs, 8, 10, None)
    # Kernel counts evaluate() calls: one for each estimate (two for a call under
    # SLOW_CALL_S: then the best of 5 follows), then, twins, one per sample: the
    # reference's 9 ms gives both Plan(1, 3), 3 samples a round, A B A B A B
    assert modules["learner"].calls == 1 + 8 * 3
    assert modules["reference"].calls == 2 + 8 * 3
    assert modules["naive"].calls == 1 + 8 // timing.SLOW_EVERY
    assert len(timings.rounds["naive"]) == 8
    twins = [kernel for kernel in calls[4:] if kernel is not modules["naive"]]
    for start in range(0, len(twins), 6):  # a round's samples of the twins
        one_round = twins[start : start + 6]
        assert all(a is not b for a, b in itertools.pairwise(one_round)), "never A A"
    # after the estimates' evaluators: the twins one call a sample without XTC's warm-up
    # call, naive (alone, slow, every SLOW_EVERY rounds) its samples in one evaluate()
    assert modules["learner"].evaluators[-1] == (0, 1)
    assert modules["reference"].evaluators[-1] == (0, 1)
    assert modules["naive"].evaluators[-1] == (
        0,
        timing.plan_samples({"naive": 0.1})["naive"].repeat,
    )


def test_a_twin_of_several_calls_a_sample_keeps_them_and_a_sample_of_one_drops_the_warm_up():
    twins = ("learner", "reference")
    assert timing.evaluation(timing.Plan(1, 3, twins=twins)) == (0, 1)
    assert timing.evaluation(timing.Plan(0, 3, twins=twins)) == (0, 1)
    assert timing.evaluation(timing.Plan(4, 10, twins=twins)) == (4, 1)
    assert timing.evaluation(timing.Plan(4, 10)) == (4, 10), "alone: its samples in one"


def test_a_race_holds_each_kernels_library_open_while_it_runs_and_closes_it_after(monkeypatch):
    # XTC's evaluator opens and closes the library at every evaluate(); alternating
    # samples are one evaluate() each, so the race keeps every library mapped, then
    # closes it (a later compile to the same path must load afresh). numpy's own
    # extension module stands in for a compiled one; a fake without a file is skipped.
    import numpy._core._multiarray_umath as compiled

    module = type("Module", (), {"file_name": compiled.__file__, "file_type": "shlib"})()
    closed = []
    monkeypatch.setattr(timing._ctypes, "dlclose", closed.append)
    with timing.held_libraries([module, Kernel(0.001)]) as held:
        assert [lib._name for lib in held] == [str(Path(compiled.__file__).absolute())]
        assert not closed
    assert closed == [held[0]._handle]

    # and a race runs its rounds inside it
    inside = []

    @contextlib.contextmanager
    def spy(modules):
        inside.append("open")
        yield []
        inside.append("closed")

    monkeypatch.setattr(timing, "held_libraries", spy)
    monkeypatch.setattr(timing, "_rounds", lambda *a: inside.append("rounds") or "timings")
    modules = {"learner": Kernel(0.001), "reference": Kernel(0.001)}
    inputs = TUTORIAL.inputs("random", seed=0)
    assert timing._time_interleaved(modules, TUTORIAL, inputs, 4, 10, None) == "timings"
    assert inside == ["open", "rounds", "closed"]


def test_a_twins_samples_take_two_placements_by_turns_and_a_round_keeps_the_faster(
    tmp_path,
):
    # The same kernel read 0.69-0.74x copies of itself at one address in a process
    # (second_placements): each twin gets a copy of its library, loaded elsewhere, and
    # its samples take the two by turns, so a round's best comes from the faster one.
    import numpy._core._multiarray_umath as compiled

    library = tmp_path / "learner_0.so"
    library.write_bytes(Path(compiled.__file__).read_bytes())
    fields = {f"_{field}": [] for field in ("shlibs", "arlibs", "headers", "headers_path")}
    module = type("Module", (), {"file_name": str(library), "file_type": "shlib"})()
    module.__dict__.update(
        _name="learner", _payload_name="matmul", _file_type="shlib", _csrcs=[],
        _bare_ptr=True, _graph=None, **fields,
    )  # fmt: skip
    plans = timing.plan_samples({"naive": 0.6, "learner": 0.02, "reference": 0.021})
    fake = Kernel(0.021)
    placed = timing.second_placements(
        {"naive": Kernel(0.6), "learner": module, "reference": fake}, plans
    )
    first, second = placed["learner"]
    assert first is module and second.file_name != module.file_name
    assert Path(second.file_name).read_bytes() == library.read_bytes()
    assert len(placed["naive"]) == 1, "a kernel alone keeps its one placement"
    assert placed["reference"] == [fake, fake], "a fake without a file is its own copy"

    # kata 10's MLIR parallel gemm, ~20 ms a call: a sample from each placement a round
    assert plans["learner"] == plans["reference"] == timing.Plan(0, 2)
    # in a round, one sample at each placement, whichever comes first; the best is the
    # faster placement's (here the second reads 0.7x: 10 ms against 7 ms)
    slow, fast = Kernel(0.010), Kernel(0.007)
    timings = timing._rounds(
        {"learner": [slow, fast], "reference": [Kernel(0.007)] * 2},
        {"learner": plans["learner"], "reference": plans["reference"]},
        4,
        None,
    )
    assert timings.rounds["learner"] == [0.007] * 4 and slow.calls == fast.calls == 4
    # a twin of one sample a round (calls of 50 ms or more) takes them round by round
    one = timing.Plan(0, 1, twins=("learner", "reference"))
    slow, fast = Kernel(0.2), Kernel(0.14)
    timings = timing._rounds(
        {"learner": [slow, fast], "reference": [Kernel(0.14)] * 2},
        {"learner": one, "reference": one},
        4,
        None,
    )
    assert timings.rounds["learner"] == [0.14, 0.2, 0.14, 0.2]
    assert timing.plan_samples({"naive": 0.6, "learner": 0.2, "reference": 0.19})[
        "learner"
    ] == timing.Plan(0, 1)


def test_slow_twins_have_openmps_workers_sleep_between_calls_and_fast_ones_do_not(monkeypatch):
    # kata 11's MLIR parallel conv (~10 ms a call) against its copy read 0.897-1.040x
    # under a busy loop with OpenMP's workers spinning 200 ms after each call, 0.999-1.008x
    # with them asleep at once; kata 04's fast parallel kernel reads 15% slower asleep.
    told = []
    monkeypatch.setattr(timing, "openmp_workers_sleep_at_once", lambda: told.append(1))
    monkeypatch.setattr(timing, "_rounds", lambda *a: "timings")
    inputs = TUTORIAL.inputs("random", seed=0)
    slow = {"naive": Kernel(0.1), "learner": Kernel(0.011), "reference": Kernel(0.010)}
    timing._time_interleaved(slow, TUTORIAL, inputs, 4, 10, None)
    assert told == [1]
    fast = {"naive": Kernel(0.1), "learner": Kernel(0.0011), "reference": Kernel(0.001)}
    timing._time_interleaved(fast, TUTORIAL, inputs, 4, 10, None)
    assert told == [1], "a fast kernel's calls would each pay a worker's wake-up"


def test_openmps_workers_are_told_to_sleep_only_where_a_kernel_loaded_the_runtime():
    # In a fresh interpreter: no kernel loaded libomp, so nothing is told (and nothing
    # loaded); once loaded (as an MLIR parallel kernel loads it), its blocktime reads 0.
    import ctypes.util
    import subprocess
    import sys

    assert ctypes.util.find_library("omp"), "libomp5 missing: run.sh installs it (XTC's MLIR)"
    script = (
        "import ctypes, os\n"
        "from xtc_katas.measure import timing\n"
        "assert timing.openmp_workers_sleep_at_once() is False\n"
        "omp = ctypes.CDLL(timing.LIBOMP, mode=os.RTLD_GLOBAL)\n"
        "assert omp.kmp_get_blocktime() > 0\n"
        "assert timing.openmp_workers_sleep_at_once() is True\n"
        "assert omp.kmp_get_blocktime() == 0, omp.kmp_get_blocktime()\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "KMP_BLOCKTIME"}
    subprocess.run([sys.executable, "-c", script], check=True, env=env)


def _tvm_workers_should_sleep_in_a_child(case: str) -> bool:
    """tvm_workers_should_sleep in a forked child, after `case`: a worker started (as
    TVM's pool starts one at a parallel call), libomp loaded, the user's own spin count."""
    import ctypes
    import threading

    threads_before = timing.threads_running()
    if case != "no worker":
        threading.Thread(target=threading.Event().wait, daemon=True).start()
    if case == "openmp's worker":
        ctypes.CDLL(timing.LIBOMP, mode=os.RTLD_GLOBAL)
    if case == "the user's own spin count":
        os.environ[timing.TVM_SPIN_ENV] = "100"
    else:
        os.environ.pop(timing.TVM_SPIN_ENV, None)
    estimates = {"naive": 0.5, "learner": 0.003, "reference": 0.0028}
    if case == "fast twins":
        estimates = {"naive": 0.05, "learner": 1.1e-4, "reference": 1e-4}
    plans = timing.plan_samples(estimates)
    return timing.tvm_workers_should_sleep(estimates, plans, threads_before)


@pytest.mark.parametrize(
    ("case", "sleep"),
    [
        ("tvm's worker", True),
        ("no worker", False),
        ("fast twins", False),
        ("openmp's worker", False),
        ("the user's own spin count", False),
    ],
)
def test_parallel_tvm_twins_of_a_millisecond_or_more_are_raced_with_tvms_workers_asleep(
    case, sleep
):
    # Kata 10's TVM parallel gemm (~3 ms) against a copy of itself under a busy loop read
    # 0.909-1.072x with TVM's workers spinning between tasks, 0.984-1.026x and
    # 0.993-1.010x asleep; kata
    # 04's (~0.1 ms) reads 25% slower asleep, quiet. TVM reads its spin count once, when
    # its first worker starts: only threads started without libomp are TVM's.
    from xtc_katas.measure.isolation import run_isolated

    assert run_isolated(_tvm_workers_should_sleep_in_a_child, case) is sleep


@pytest.mark.perf  # races real kernels
@pytest.mark.parametrize(
    ("function", "children"),
    [("gemm_parallel", ["TvmWorkersSpun", "Timings"]), ("gemm_write_cache", ["Timings"])],
)
def test_a_real_parallel_tvm_race_runs_again_with_sleeping_workers_a_sequential_one_does_not(
    monkeypatch, tmp_path, function, children
):
    # Kata 10's TVM references on 512^3 (~3 ms a call and more): the parallel one starts
    # TVM's worker in the first child's estimates, the sequential one starts none.
    from xtc_katas.kata.problems import PROBLEMS
    from xtc_katas.measure.workdir import Workdir

    kata = find(10)
    problem = PROBLEMS[kata.task(function).problem]
    monkeypatch.delenv(timing.TVM_SPIN_ENV, raising=False)  # only ever set in children
    reference = TaskUnderTest(
        kata, kata.task(function), reference_learner(kata), KataBackend("tvm"), Workdir(tmp_path)
    ).compiled()
    answers = []
    real = timing.run_isolated

    def spy(function, *args, **options):
        answers.append(type(result := real(function, *args, **options)).__name__)
        return result

    monkeypatch.setattr(timing, "run_isolated", spy)
    timings = timing.time_side_by_side({"learner": reference, "reference": reference}, problem, 1)
    assert answers == children and timings.rounds["learner"][0] > 0
    assert timing.TVM_SPIN_ENV not in os.environ


def test_a_race_whose_tvm_workers_spun_runs_again_in_a_child_that_has_them_sleep(monkeypatch):
    # The first child answers with its estimates; the second is given them (no kernel
    # runs before its workers are told: the spin count is read once per process) and
    # sets TVM's spin count to 0 before any call, unless the user set one.
    monkeypatch.setattr(timing, "require_own_cores", lambda what: None)
    calls = []

    def child(function, *args, what):
        calls.append(args)
        return timing.TvmWorkersSpun({"learner": 0.003}) if len(calls) == 1 else timings

    timings = timing.Timings(rounds={"learner": [0.003]})
    monkeypatch.setattr(timing, "run_isolated", child)
    assert timing.time_side_by_side({"learner": Kernel(0.003)}, TUTORIAL) is timings
    assert len(calls) == 2 and calls[1][-1] == {"learner": 0.003}
    # in the second child: the spin count set before the estimates, known ones not re-read
    # set, then unset, through monkeypatch: what this process had is restored after the
    # test, though the call below sets the spin count in this process
    monkeypatch.setenv(timing.TVM_SPIN_ENV, "any")
    monkeypatch.delenv(timing.TVM_SPIN_ENV)
    monkeypatch.setattr(timing, "_rounds", lambda *a: "rounds")
    monkeypatch.setattr(
        timing, "tvm_workers_should_sleep", lambda *a: os.environ.get(timing.TVM_SPIN_ENV) is None
    )
    kernels = {"naive": Kernel(0.1), "learner": Kernel(0.003), "reference": Kernel(0.003)}
    inputs = TUTORIAL.inputs("random", seed=0)
    first = timing._time_interleaved(kernels, TUTORIAL, inputs, 4, 10, None)
    assert isinstance(first, timing.TvmWorkersSpun), first
    assert set(first.estimates) == set(kernels)
    calls_before = {name: kernel.calls for name, kernel in kernels.items()}
    again = timing._time_interleaved(
        kernels,
        TUTORIAL,
        inputs,
        4,
        10,
        None,
        None,
        timing.ROUND_S,
        ("naive",),
        first.estimates,
    )
    assert again == "rounds" and os.environ[timing.TVM_SPIN_ENV] == "0"
    assert {name: kernel.calls for name, kernel in kernels.items()} == calls_before


def test_a_kernel_faster_than_the_peak_has_the_peak_probed_again(monkeypatch):
    # The first probe read low (20 GFMA/s, as under a CPU hog); the race's reference ran
    # at 24: the peak is probed again before any figure is shown, and every figure of the
    # message divides by the same, higher peak.
    monkeypatch.setattr(TaskUnderTest, "race_kernels", lambda *a: {})
    monkeypatch.setattr(TaskUnderTest, "speed_advice", lambda task: "the next step")
    monkeypatch.setattr(TaskUnderTest, "shape_mistakes", lambda task: [])  # planted: no nest
    monkeypatch.setattr(speed_judge, "speedups", lambda t: Speedups(learner=40.0, reference=50.0))
    seconds = {"learner": TUTORIAL.fmas / 20e9, "reference": TUTORIAL.fmas / 24e9}
    timings = timing.Timings(rounds={name: [s] for name, s in seconds.items()})
    monkeypatch.setattr(speed_judge, "time_side_by_side", lambda *a, **k: timings)
    peaks = iter([20e9, 25e9])
    current = [next(peaks)]

    def reprobe():
        current[0] = next(peaks, current[0])
        return True

    recorded = {}
    task = judged("schedule_interchange", lambda: current[0], recorded.update)
    dataclasses.replace(task, reprobe=reprobe).assert_speed()
    assert recorded["percent_of_peak"] == pytest.approx(80.0)  # 20 of 25, not 100 of 20


# --- kata 08: numpy is the race's baseline ---------------------------------------------

#: numpy's time per call, every call: the yardstick of kata 08's race.
NUMPY_S = 0.010


def against_numpy(monkeypatch, learner_s, reference_s, backend="tvm"):
    """The verdict of kata 08's race when numpy takes NUMPY_S, the reference
    `reference_s` and the learner's kernel `learner_s` per call, in every round (planted:
    no kernel runs, nothing is timed); and what the test recorded."""
    kata = find(8)
    seconds = {"numpy": NUMPY_S, "learner": learner_s, "reference": reference_s}
    raced = {}

    def timed(modules, problem, **options):
        raced.update(modules, threads=options["threads"])
        return timing.Timings(rounds={name: [seconds[name]] * 5 for name in modules}, planned=5)

    monkeypatch.setattr(TaskUnderTest, "compiled", lambda task: task.learner)
    monkeypatch.setattr(TaskUnderTest, "numerics_failure", lambda task: "")  # planted
    monkeypatch.setattr("xtc_katas.checks.task_under_test.reference_learner", lambda k: "ref")
    monkeypatch.setattr(speed_judge, "time_side_by_side", timed)
    recorded = {}
    task = TaskUnderTest(
        kata,
        kata.task("schedule_large"),
        "learner",
        KataBackend(backend),
        None,
        lambda: 1e11,
        recorded.update,
        problem=TUTORIAL,
    )
    bar = task.on_threads(1).assert_speed(advice="kata 08's advice")
    return bar, recorded, raced


def test_numpy_is_a_kernel_of_the_race_on_the_tasks_threads(monkeypatch):
    bar, recorded, raced = against_numpy(monkeypatch, learner_s=NUMPY_S, reference_s=NUMPY_S)
    assert isinstance(raced.pop("numpy"), timing.NumpyKernel)
    assert raced == {"learner": "learner", "reference": "ref", "threads": 1}
    assert recorded["speedup"] == pytest.approx(1.0) and recorded["over"] == "numpy"
    assert recorded["tier"].startswith("gold")
    assert bar.value == pytest.approx(find(8).cap("schedule_large", "tvm"))


def test_the_learner_is_read_against_the_reference_round_by_round_against_numpy(monkeypatch):
    # The reference at 0.6x numpy, the learner at 0.875 of the reference's speed: 0.525x,
    # above the bar of HEADROOM x 0.6 (below the cap, so the reference sets it).
    bar, recorded, _ = against_numpy(monkeypatch, NUMPY_S / 0.525, NUMPY_S / 0.6)
    assert HEADROOM * 0.6 < 0.525 and HEADROOM * 0.6 < find(8).cap("schedule_large", "tvm")
    assert recorded["reference_speedup"] == pytest.approx(0.6)
    assert recorded["speedup"] == pytest.approx(0.525)
    assert bar.value == pytest.approx(HEADROOM * 0.6)
    assert recorded["tier"] == "bronze"


def test_a_kernel_below_numpys_bar_fails_with_the_figures_and_the_next_step(monkeypatch):
    cap = find(8).cap("schedule_large", "tvm")
    with pytest.raises(SpeedBelowBar) as failure:
        against_numpy(monkeypatch, learner_s=NUMPY_S / (0.5 * cap), reference_s=NUMPY_S)
    message = str(failure.value)
    assert "08_large_matmul › schedule_large()" in message
    assert "numpy's speed (" in message and "1 core)" in message
    assert "next: kata 08's advice" in message
    assert "your tier against numpy:" in message


def test_numpys_kernel_times_numpy_as_xtcs_evaluator_times_a_module():
    from xtc_katas.measure.timing import shared_buffers

    inputs = TUTORIAL.inputs("random", seed=0)
    parameters = shared_buffers(inputs, np.zeros(TUTORIAL.output_shape, np.float32))
    evaluator = timing.NumpyKernel(TUTORIAL).get_evaluator(
        parameters=parameters, number=2, repeat=3, min_repeat_ms=0, validate=False
    )
    times, code, message = evaluator.evaluate()
    assert code == 0 and message == "" and len(times) == 3 and all(t > 0 for t in times)


def test_a_step_that_did_not_pay_is_said_of_this_run_unless_several_races_agree(monkeypatch):
    # Issue 40: one run read a parallel step slower than its previous step, the next run
    # read it 1.7x faster. One race speaks for itself; only races that agree speak for
    # the machine.
    def judged_with(readings):
        races = iter(Speedups(learner=x, reference=30.0, previous=40.0) for x in readings)
        monkeypatch.setattr(TaskUnderTest, "race_kernels", lambda *a: {})
        monkeypatch.setattr(TaskUnderTest, "speed_advice", lambda task: "the next step")
        monkeypatch.setattr(TaskUnderTest, "shape_mistakes", lambda task: [])
        monkeypatch.setattr(speed_judge, "speedups", lambda t: next(races))
        monkeypatch.setattr(speed_judge, "time_side_by_side", lambda *a, **k: Typical())
        recorded = {}
        judged("schedule_parallel", record=recorded.update).assert_speed()
        return recorded["step"]

    assert "did not pay in this run" in judged_with([30.0])
    assert "did not pay on this machine (2 races agreed)" in judged_with([19.0, 30.0])


@pytest.mark.parametrize(("learner", "close"), [(36.0, True), (33.0, True), (45.0, False)])
def test_a_verdict_within_ten_percent_of_its_bar_says_a_re_run_may_flip_it(
    monkeypatch, learner, close
):
    task, _, recorded = check(monkeypatch, [learner] * 3)  # the bar: HEADROOM x 50
    if learner < HEADROOM * 50:
        with pytest.raises(SpeedBelowBar) as failure:
            task.assert_speed()
        assert ("close to the bar" in str(failure.value)) is close
    else:
        task.assert_speed()
        assert ("close" in recorded) is close
