"""Tests of kata 01. Each test's name contains the function it checks."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

dims = st.integers(min_value=1, max_value=4096)
positive = st.floats(min_value=1e-9, max_value=1e3, allow_nan=False, allow_infinity=False)
peaks = st.floats(min_value=1e6, max_value=1e13, allow_nan=False, allow_infinity=False)


def test_matmul_fmas_of_the_tutorial_problem(learner_module):
    assert learner_module.matmul_fmas(4, 32, 512) == 65536


@given(i=dims, j=dims, k=dims)
def test_matmul_fmas_counts_one_per_ijk_triple(learner_module, i, j, k):
    n = learner_module.matmul_fmas(i, j, k)
    assert isinstance(n, int)
    assert n == i * j * k


@pytest.mark.parametrize("bad", [(0, 4, 4), (4, -1, 4), (4, 4, 0)])
def test_matmul_fmas_rejects_non_positive_dims(learner_module, bad):
    with pytest.raises(ValueError):
        learner_module.matmul_fmas(*bad)


def test_percent_of_peak_of_a_known_case(learner_module):
    # 1e9 FMAs in 1 s on a 2e9 FMA/s core: half the peak.
    assert learner_module.percent_of_peak(10**9, 1.0, 2e9) == pytest.approx(50.0)


@given(fmas=st.integers(1, 10**12), seconds=positive, peak=peaks, cores=st.integers(1, 64))
def test_percent_of_peak_is_rate_over_peak_of_the_cores(learner_module, fmas, seconds, peak, cores):
    got = learner_module.percent_of_peak(fmas, seconds, peak, cores)
    assert got == pytest.approx(100.0 * fmas / seconds / (peak * cores), rel=1e-9)


@given(fmas=st.integers(1, 10**12), seconds=positive, peak=peaks)
def test_percent_of_peak_halves_when_time_doubles_or_cores_double(
    learner_module, fmas, seconds, peak
):
    one = learner_module.percent_of_peak(fmas, seconds, peak)
    assert learner_module.percent_of_peak(fmas, 2 * seconds, peak) == pytest.approx(
        one / 2, rel=1e-9
    )
    assert learner_module.percent_of_peak(fmas, seconds, peak, cores=2) == pytest.approx(
        one / 2, rel=1e-9
    )


@pytest.mark.parametrize(
    "args", [(100, 0.0, 1e9, 1), (100, -1.0, 1e9, 1), (100, 1.0, 0.0, 1), (100, 1.0, 1e9, 0)]
)
def test_percent_of_peak_rejects_non_positive_inputs(learner_module, args):
    with pytest.raises(ValueError):
        learner_module.percent_of_peak(*args)


def test_measure_peak_agrees_with_the_harness(learner_module, peak):
    # The harness's peak is its register FMA probe; XTC's benchmark reads up to ~30% below
    # it, and the notes saw 17-47 GFMA/s across calls: within a factor 3, which a made-up
    # constant will not be. On a busy machine XTC's one-shot runs read low where the
    # probe's short samples do not (AMD EPYC family 23 model 1, 2 vCPU, load average 5:
    # XTC 4.3-6.4 GFMA/s, the probe 20.4; with a core of its own XTC read 14.5-19.9).
    # A low reading is then checked against XTC's own benchmark, read again right after,
    # and yours is read again (twice at most) while it stays 3 times below: a burst of load
    # during one reading is not a wrong answer, a wrong unit or formula stays wrong.
    got = learner_module.measure_peak("float32")
    assert isinstance(got, float)
    harness = peak()
    assert got < harness * 3, (
        f"01_peak › measure_peak() gave {got:.3g} FMA/s, 3 times or more the harness's "
        f"register probe ({harness:.3g} FMA/s): return FMA/s of one core, as XTC's "
        "benchmark gives them"
    )
    if got > harness / 3:
        return
    from xtc.runtimes.host import HostRuntime

    now = max(HostRuntime.get().evaluate_flops("float32") for _ in range(3))
    for _ in range(2):
        if got > now / 3 or got < now / 1000:  # 1000 times low is a unit, not noise
            break
        got = max(got, learner_module.measure_peak("float32"))
    assert got > now / 3, (
        f"01_peak › measure_peak() gave {got:.3g} FMA/s where XTC's benchmark read "
        f"{now:.3g} right after (best of 3 calls) and the harness's register probe "
        f"{harness:.3g}: return the best reading of XTC's evaluate_flops, unchanged"
    )


def scripted_benchmark(module):
    """In your module's process: measure_peak with XTC's benchmark scripted to read the
    best reading third, and the readings it took."""
    from xtc.runtimes.host import HostRuntime

    readings = [2.1e10, 3.3e10, 4.7e10, 1.7e10, 4.1e10]
    taken = []

    def scripted(self, dtype):
        taken.append(readings[len(taken) % len(readings)])
        return taken[-1]

    original, HostRuntime.evaluate_flops = HostRuntime.evaluate_flops, scripted
    try:
        return module.measure_peak("float32"), taken
    finally:
        HostRuntime.evaluate_flops = original


def test_measure_peak_returns_the_best_reading_of_xtcs_benchmark(learner_module):
    # The harness scripts XTC's benchmark with the best reading third: one call or two
    # miss it, and so do a made-up constant, an average or a rescaled figure; the best
    # of 3 calls or more finds it.
    got, taken = learner_module.run(scripted_benchmark)
    assert taken, "01_peak › measure_peak(): call XTC's HostRuntime.get().evaluate_flops(dtype)"
    calls = "once" if len(taken) == 1 else f"{len(taken)} times"
    assert len(taken) >= 3, (
        f"01_peak › measure_peak() called evaluate_flops {calls}: keep the best of several "
        f"calls (3 or more): each call times its probes once, and a reading that met a "
        f"neighbour reads low"
    )
    assert got == max(taken), (
        f"01_peak › measure_peak() returned {got:.3g} after XTC's benchmark read "
        f"{[f'{t:.3g}' for t in taken]}: which reading did noise disturb least? (noise "
        "only ever lowers a reading)"
    )


def test_measure_peak_rejects_a_dtype_it_cannot_measure(learner_module):
    with pytest.raises(ValueError):
        learner_module.measure_peak("float64")
