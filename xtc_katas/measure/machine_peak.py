"""The machine's single-core float32 peak, measured at most once per process.

`HostRuntime.evaluate_flops` takes ~1.3 s and reads anywhere from half to all of the true
peak on a busy machine, so it is called only when a test reports % of peak, three times,
keeping the best. Users who know their peak set XTC_KATAS_PEAK_GFMAS (float32 FMA/s of
ONE core, in billions) and skip the measurement.
"""

from __future__ import annotations

import os
from functools import cache

PEAK_ENV = "XTC_KATAS_PEAK_GFMAS"


@cache
def peak_fmas_per_s(calls: int = 3) -> float:
    override = os.environ.get(PEAK_ENV)
    if override:
        value = float(override) * 1e9
        if value <= 0:
            raise ValueError(f"{PEAK_ENV}={override!r} must be a positive number of GFMA/s")
        return value
    from xtc.runtimes.host import HostRuntime

    runtime = HostRuntime.get()
    return max(runtime.evaluate_flops("float32") for _ in range(calls))
