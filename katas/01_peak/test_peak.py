"""Tests of kata 01. Each test's name contains the function it checks; each failure names
the mistake in words (KataFailure), not with pytest's view of the harness's objects."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from xtc_katas.kata.failures import KataFailure

dims = st.integers(min_value=1, max_value=4096)
positive = st.floats(min_value=1e-9, max_value=1e3, allow_nan=False, allow_infinity=False)
peaks = st.floats(min_value=1e6, max_value=1e13, allow_nan=False, allow_infinity=False)


def check(ok, message):
    if not ok:
        raise KataFailure(message)


def fmas_mistake(args, got, want):
    """What matmul_fmas(*args) returning `got` (not `want`) gets wrong."""
    call = f"01_peak › matmul_fmas{args} returned {got!r}"
    if not isinstance(got, int):
        return f"{call}, a {type(got).__name__}: a count of FMAs is an exact int"
    if got == 2 * want:
        return f"{call}, twice the {want} multiply-adds: one FMA is one multiply and one add"
    return f"{call}, not {want}: count the multiply-adds of the loop nest in README.md"


def test_matmul_fmas_of_the_tutorial_problem(learner_module):
    got = learner_module.matmul_fmas(4, 32, 512)
    check(got == 65536, fmas_mistake((4, 32, 512), got, 65536))


# No deadline: a count is right or wrong however loaded the machine; under a grading
# node's load (8 on 2 cores) a solved matmul_fmas missed Hypothesis' 200 ms on one run.
@settings(deadline=None)
@given(i=dims, j=dims, k=dims)
def test_matmul_fmas_counts_one_per_ijk_triple(learner_module, i, j, k):
    n = learner_module.matmul_fmas(i, j, k)
    check(isinstance(n, int) and n == i * j * k, fmas_mistake((i, j, k), n, i * j * k))


def rejects(learner_module, function, args, what):
    """`function(*args)` raises ValueError, for `what`."""
    try:
        got = getattr(learner_module, function)(*args)
    except ValueError:
        return
    call = f"{function}({', '.join(map(repr, args))})"
    raise KataFailure(f"01_peak › {call} returned {got!r}: {what} is a ValueError")


@pytest.mark.parametrize("bad", [(0, 4, 4), (4, -1, 4), (4, 4, 0)])
def test_matmul_fmas_rejects_non_positive_dims(learner_module, bad):
    rejects(learner_module, "matmul_fmas", bad, "a dimension that is not positive")


def percent(value):
    return f"{value:.3g}%" if isinstance(value, (int, float)) else repr(value)


def test_percent_of_peak_of_a_known_case(learner_module):
    got = learner_module.percent_of_peak(10**9, 1.0, 2e9)
    fraction = ", as a percentage, not a fraction" if got == pytest.approx(0.5) else ""
    check(
        got == pytest.approx(50.0),
        f"01_peak › percent_of_peak(10**9, 1.0, 2e9) returned {got!r}: 1e9 FMAs in 1 s on "
        f"a core of 2e9 FMA/s use half its peak{fraction}",
    )


def cores_mistake(learner_module, fmas, seconds, peak):
    """The words of a percent_of_peak that doubling cores does not halve, else ""."""
    one, two = (learner_module.percent_of_peak(fmas, seconds, peak, cores=n) for n in (1, 2))
    if isinstance(one, (int, float)) and two == pytest.approx(one / 2, rel=1e-9):
        return ""
    return (
        "01_peak › percent_of_peak(): doubling cores should halve the percentage (the peak "
        f"of 2 cores is twice one core's); yours went from {percent(one)} to {percent(two)}"
    )


@given(fmas=st.integers(1, 10**12), seconds=positive, peak=peaks, cores=st.integers(1, 64))
def test_percent_of_peak_is_rate_over_peak_of_the_cores(learner_module, fmas, seconds, peak, cores):
    got = learner_module.percent_of_peak(fmas, seconds, peak, cores)
    want = 100.0 * fmas / seconds / (peak * cores)
    if got == pytest.approx(want, rel=1e-9):
        return
    one_core = learner_module.percent_of_peak(fmas, seconds, peak, cores=1)
    if cores > 1 and one_core == pytest.approx(100.0 * fmas / seconds / peak, rel=1e-9):
        mistake = cores_mistake(learner_module, fmas, seconds, peak)
        check(not mistake, mistake)
    fraction = ", a fraction, not a percentage" if got == pytest.approx(want / 100) else ""
    raise KataFailure(
        f"01_peak › percent_of_peak({fmas}, {seconds!r}, {peak!r}, cores={cores}) returned "
        f"{got!r}, not {want:.6g}{fraction}: the rate fmas / seconds as a percentage of the "
        "peak of the cores"
    )


@given(fmas=st.integers(1, 10**12), seconds=positive, peak=peaks)
def test_percent_of_peak_halves_when_time_doubles_or_cores_double(
    learner_module, fmas, seconds, peak
):
    one = learner_module.percent_of_peak(fmas, seconds, peak)
    slower = learner_module.percent_of_peak(fmas, 2 * seconds, peak)
    check(
        isinstance(one, (int, float)) and slower == pytest.approx(one / 2, rel=1e-9),
        "01_peak › percent_of_peak(): doubling the seconds should halve the percentage; "
        f"yours went from {percent(one)} to {percent(slower)}",
    )
    mistake = cores_mistake(learner_module, fmas, seconds, peak)
    check(not mistake, mistake)


@pytest.mark.parametrize(
    "args", [(100, 0.0, 1e9, 1), (100, -1.0, 1e9, 1), (100, 1.0, 0.0, 1), (100, 1.0, 1e9, 0)]
)
def test_percent_of_peak_rejects_non_positive_inputs(learner_module, args):
    what = "seconds, a peak or cores that is not positive"
    rejects(learner_module, "percent_of_peak", args, what)


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
    check(
        isinstance(got, float),
        f"01_peak › measure_peak() returned {got!r}: a peak in FMA/s is a float",
    )
    harness = peak()
    check(
        got < harness * 3,
        f"01_peak › measure_peak() gave {got:.3g} FMA/s, 3 times or more the harness's "
        f"register probe ({harness:.3g} FMA/s): return FMA/s of one core, as XTC's "
        "benchmark gives them",
    )
    if got > harness / 3:
        return
    from xtc.runtimes.host import HostRuntime

    now = max(HostRuntime.get().evaluate_flops("float32") for _ in range(3))
    for _ in range(2):
        if got > now / 3 or got < now / 1000:  # 1000 times low is a unit, not noise
            break
        got = max(got, learner_module.measure_peak("float32"))
    check(
        got > now / 3,
        f"01_peak › measure_peak() gave {got:.3g} FMA/s where XTC's benchmark read "
        f"{now:.3g} right after (best of 3 calls) and the harness's register probe "
        f"{harness:.3g}, a third of XTC's or less: is yours a reading of evaluate_flops as "
        "it gives it, and which of several readings estimates the machine? (the lesson's "
        "'Noise')",
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
    check(taken, "01_peak › measure_peak(): call XTC's HostRuntime.get().evaluate_flops(dtype)")
    calls = "once" if len(taken) == 1 else f"{len(taken)} times"
    check(
        len(taken) >= 3,
        f"01_peak › measure_peak() called evaluate_flops {calls}: each call times its "
        "probes once, and a reading that met a neighbour reads low. How many readings "
        "(3 or more, here) give one a chance to miss the neighbours?",
    )
    check(
        got == max(taken),
        f"01_peak › measure_peak() returned {got:.3g} after XTC's benchmark read "
        f"{[f'{t:.3g}' for t in taken]}: which reading did noise disturb least? (the "
        "lesson's 'Noise: several readings, compared side by side')",
    )


def test_measure_peak_rejects_a_dtype_it_cannot_measure(learner_module):
    rejects(learner_module, "measure_peak", ("float64",), "a dtype XTC's runtime cannot measure")
