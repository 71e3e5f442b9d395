"""The best reading of the peak probe ever taken on this CPU, kept on disk.

Noise only ever lowers a peak probe's reading: a probe cannot run faster than the core,
and on a busy machine another process's load can slow the probe's half second more than
the kernels' short rounds (docs/timing.md#the-peak-record-and-probing-again). One reading
per process is therefore kept at its best across processes: the highest reading of this
CPU (same key as the CPU reading cache: vendor, family, model, name, stepping, flags)
and of this probe (its compile flags: an emulated ISA is another probe), in the user's
cache directory. A learner's % of peak then divides by the best the core has shown, not
by the moment its run began in.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from xtc_katas.measure import cpu_reading, module_cache
from xtc_katas.measure.fma_probe import Reading


def key_of(reading: Reading) -> str | None:
    """What a kept reading must match: this CPU and this probe; None without /proc/cpuinfo."""
    cpu = cpu_reading.identity()
    if cpu is None:
        return None
    return "\n".join([cpu, f"probe {reading.bits}-bit x {reading.chains}", *reading.flags])


def path_of(key: str) -> Path:
    return module_cache.record_path("peak", key)


def best(reading: Reading) -> Reading:
    """`reading`, or the best reading kept for this CPU and probe if that one is higher;
    a higher `reading` is kept for the next processes."""
    key = key_of(reading)
    if key is None:
        return reading
    path = path_of(key)
    kept = module_cache.read_record(path, key)
    if not isinstance(kept, (int, float)):
        kept = 0.0  # none yet, damaged or another CPU's: this reading stands
    if kept > reading.fmas_per_s:
        by_width = {**reading.by_width, reading.bits: kept}
        return replace(reading, fmas_per_s=kept, by_width=by_width, kept=True)
    module_cache.write_record(path, key, reading.fmas_per_s)
    return reading
