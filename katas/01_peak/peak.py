"""Kata 01 — the metric: FMAs, % of peak and the machine's peak.

Fill in the three functions below, then run:  pytest katas/01_peak
The lesson is in README.md next to this file; `xtc-katas hint 1` gives hints one by one.
"""


def matmul_fmas(I: int, J: int, K: int) -> int:  # noqa: E741
    """Number of fused multiply-adds in C = A @ B, A of shape (I, K) and B of shape (K, J).

    The work of the loop nest in README.md, whatever a schedule later does to its loops:
    exact for any size (an int, never a float). Raise ValueError if a dimension is not
    positive: a problem of size zero has no speed.
    """
    raise NotImplementedError


def percent_of_peak(fmas: int, seconds: float, peak_fmas_per_s: float, cores: int = 1) -> float:
    """How close the kernel came to the best rate `cores` cores can reach, in percent.

    `peak_fmas_per_s` is the peak of ONE core; 100% means every FMA unit of every core
    used busy on every cycle (the lesson's "The score: % of peak"). Raise ValueError if
    seconds, peak_fmas_per_s or cores is not positive.
    """
    raise NotImplementedError


def measure_peak(dtype: str = "float32") -> float:
    """This machine's single-core peak in FMA/s for `dtype`, measured with XTC's runtime.

    XTC's runtime (README.md, "XTC's primitive") gives one reading of one core per call,
    and one reading can meet noise. The tests want 3 readings or more and, unchanged, the
    one noise disturbed least: which way does noise push a reading? A dtype the runtime
    cannot measure is a ValueError, never a peak.
    """
    raise NotImplementedError
