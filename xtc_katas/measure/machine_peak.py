"""The machine's single-core float32 peak, measured at most once per process.

The peak every "% of peak" divides by is the harness's register FMA probe
(fma_probe.py), not XTC's `HostRuntime.evaluate_flops`: XTC's probes load a vector from
L1 for every FMA and are timed once each, so they read low where two loads per cycle
are the core's limit, and good kernels then read above 100% of them; the register probe
is also several times faster to take (docs/timing.md#the-peak-probe). Users who know
their peak set XTC_KATAS_PEAK_GFMAS (float32 FMA/s of ONE core, in billions) and skip
the measurement.

XTC's reading stays available (`xtc_peak_fmas_per_s`, `peak_note`): XTC's own
exploration divides by it, and a learner comparing figures with XTC's should see why
the two differ. `python -m xtc_katas.measure.machine_peak` prints both, several times.
"""

from __future__ import annotations

import argparse
import os
import statistics
from functools import cache

from xtc_katas.measure import fma_probe, peak_record

PEAK_ENV = "XTC_KATAS_PEAK_GFMAS"
#: Above this relative difference, XTC's reading is worth a line next to the harness's.
NOTE_ABOVE = 0.05


def override() -> float | None:
    """XTC_KATAS_PEAK_GFMAS in FMA/s, or None when unset."""
    value = os.environ.get(PEAK_ENV)
    if not value:
        return None
    peak = float(value) * 1e9
    if peak <= 0:
        raise ValueError(f"{PEAK_ENV}={value!r} must be a positive number of GFMA/s")
    return peak


@cache
def probe_reading() -> fma_probe.Reading:
    """The register probe's reading, measured once per process (fma_probe.measure), or
    the best kept for this CPU when that is higher (peak_record.py: noise only lowers a
    probe's reading)."""
    return peak_record.best(fma_probe.measure())


#: How many times a process may probe again because a kernel ran faster than the peak.
REPROBES = 2
_reprobed = 0


def reprobe() -> bool:
    """Probe the peak again, at most REPROBES times per process; True if it rose.

    Called when a kernel ran faster than the peak: the probe saw a slower moment than
    the kernel's race did, which happens on a busy machine before peak_record holds a
    quiet reading (docs/timing.md#the-peak-record-and-probing-again). A second reading,
    taken later, may catch the core as the race did; peak_record keeps the best for the
    next processes. Never with XTC_KATAS_PEAK_GFMAS: the user's figure stands.
    """
    global _reprobed
    if override() is not None or _reprobed >= REPROBES:
        return False
    _reprobed += 1
    before = peak_fmas_per_s()
    probe_reading.cache_clear()
    peak_fmas_per_s.cache_clear()
    return peak_fmas_per_s() > before


@cache
def peak_fmas_per_s() -> float:
    """Single-core float32 FMA/s: XTC_KATAS_PEAK_GFMAS, else the register probe."""
    given = override()
    return given if given is not None else probe_reading().fmas_per_s


@cache
def xtc_peak_fmas_per_s(calls: int = 3) -> float:
    """XTC's `evaluate_flops("float32")`, best of `calls` calls (~1.3 s each)."""
    from xtc.runtimes.host import HostRuntime

    runtime = HostRuntime.get()
    return max(runtime.evaluate_flops("float32") for _ in range(calls))


def peak_source() -> str:
    """Where peak_fmas_per_s() comes from, for a report's header."""
    given = override()
    if given is not None:
        return f"{given / 1e9:.1f} GFMA/s per core, from {PEAK_ENV}"
    reading = probe_reading()
    return f"{reading.fmas_per_s / 1e9:.1f} GFMA/s per core, {reading.describe()}"


def peak_note() -> str | None:
    """One line when XTC's evaluate_flops (best of 3) differs from the harness's peak by
    more than NOTE_ABOVE, else None. Measures XTC's reading (~4 s) on the first call."""
    harness, xtc = peak_fmas_per_s(), xtc_peak_fmas_per_s()
    gap = xtc / harness - 1
    if abs(gap) <= NOTE_ABOVE:
        return None
    why = (
        "its probes load a vector from memory for every FMA and time each probe once "
        "(kata 01's lesson)"
        if gap < 0
        else "a noisy probe or a clock that changed between the two"
    )
    return (
        f"XTC's evaluate_flops reads {xtc / 1e9:.1f} GFMA/s (best of 3), "
        f"{abs(gap):.0%} {'below' if gap < 0 else 'above'} the harness's "
        f"{harness / 1e9:.1f}: {why}"
    )


def summary_lines(compare: bool = True) -> list[str]:
    """For a summary that showed % of peak: where the peak came from and, with `compare`,
    XTC's reading when it differs by more than NOTE_ABOVE (its first call costs ~4 s).
    Nothing when this process measured no peak: a run that never needed one pays nothing.
    """
    if not peak_fmas_per_s.cache_info().currsize:
        return []
    note = peak_note() if compare and override() is None else None
    return [f"peak: {peak_source()}", *([f"  {note}"] if note else [])]


def main(argv: list[str] | None = None) -> int:
    """Both peaks side by side, `--calls` times each, on this machine."""
    from xtc.runtimes.host import HostRuntime

    from xtc_katas.measure import machine

    parser = argparse.ArgumentParser(prog="python -m xtc_katas.measure.machine_peak")
    parser.add_argument("--calls", type=int, default=5, help="readings of each probe")
    args = parser.parse_args(argv)
    print(machine.describe())
    probe = [fma_probe.measure() for _ in range(args.calls)]
    runtime = HostRuntime.get()
    xtc = [runtime.evaluate_flops("float32") / 1e9 for _ in range(args.calls)]
    for bits in probe[0].by_width:
        show(f"register probe, {bits}-bit", [r.by_width[bits] / 1e9 for r in probe])
    show("XTC evaluate_flops", xtc)
    print(probe[0].describe())
    return 0


def show(name: str, values: list[float]) -> None:
    print(
        f"{name:>26}: {min(values):5.1f}-{max(values):5.1f} GFMA/s, "
        f"median {statistics.median(values):5.1f} ({len(values)} calls)"
    )


if __name__ == "__main__":
    raise SystemExit(main())
