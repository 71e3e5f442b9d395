"""The one rule behind every speed judgement: ratios measured in the same run, on this machine.

A speedup calibrated on one CPU is not a bar on another (a learner's machine is any
x86-64, AVX2 or AVX-512, 2 to 64 cores). So every judgement (every perf test, the search
katas, `xtc-katas report`, the calibration tool) times side by side, in one run
(timing.py): a baseline (the naive schedule, or numpy in kata 08), the learner's kernel,
the task's reference solution and, where the task adds one technique to the previous
task's, the previous task's reference. All figures are speedups over the baseline:

    fast enough:         min(cap, HEADROOM x reference)
    past the previous:   max(that, min(ABOVE_PREVIOUS x previous, HEADROOM x reference))

The reference, run now on this machine, clears it by 1/HEADROOM (CLEARS) whatever its
speed here; the cap keeps a fast machine from asking more than the task teaches; the
previous step's reference keeps a schedule that skipped the task's technique from passing
wherever speed can tell the two apart, and the loop-nest shape check where it cannot
(docs/judging.md#the-speed-rule). In words: RULE, which the README and docs/judging.md
quote through a block generated from these constants (tools/lesson_blocks.py;
tests/test_lesson_code.py names a stale one). Nothing else states these numbers.
"""

from __future__ import annotations

from dataclasses import dataclass

from xtc_katas.kata.failures import KataFailure

#: The bar is at most this fraction of the reference's speedup in the same run. A correct
#: solution, timed like the reference, reads within a few % of it (learner = reference,
#: two compiles, side by side: 0.98-1.02); 1/HEADROOM leaves room for the noise the
#: flake checks measure (flakecheck.py requires a margin of 1.3 in every run).
HEADROOM = 0.7
#: How far a solution as fast as the reference clears the bar, at least (more where the
#: cap sets the bar).
CLEARS = 1 / HEADROOM
#: Where the previous task's reference is timed too, the bar is at least this much above
#: it: the same schedule timed twice reads within ~5%, so 1.15x tells a new technique
#: from an old one.
ABOVE_PREVIOUS = 1.15

#: The rule in one sentence: the README and docs/judging.md quote it (generated blocks).
RULE = (
    f"The bar is {HEADROOM:g} × the reference's figure in the same run, at most the task's "
    "cap; where the task races the previous step's reference too, it is raised to at least "
    f"{ABOVE_PREVIOUS:g} × that step's figure, even above the cap, but never above "
    f"{HEADROOM:g} × the reference."
)


@dataclass(frozen=True)
class Speedups:
    """Speedups over one baseline, every one of them from the same side-by-side run."""

    learner: float
    reference: float
    previous: float | None = None


@dataclass(frozen=True)
class Bar:
    """The speedup a learner must reach in this run, and why it is that number."""

    value: float
    reason: str
    #: Set when this step's reference did not beat the previous step's in this run.
    step_note: str = ""

    def margin(self, speedup: float) -> float:
        return speedup / self.value


#: A step pays where its reference is this much faster than the previous step's: only
#: then is the bar (at most HEADROOM x reference) at least ABOVE_PREVIOUS x previous, so
#: that a test named "... beats X where it pays" asks the learner to beat X.
PAYS = ABOVE_PREVIOUS / HEADROOM


def step_pays(speedups: Speedups) -> bool:
    """Whether this step's reference beat the previous step's by PAYS, so that the bar
    asks the learner to beat it by ABOVE_PREVIOUS (True where there is no previous step).
    The float product is rounded so that exactly PAYS x previous counts as paying."""
    if speedups.previous is None:
        return True
    ceiling = round(HEADROOM * speedups.reference, 9)  # the bar's highest value
    return ceiling >= round(ABOVE_PREVIOUS * speedups.previous, 9)


def step_note(speedups: Speedups, why: str = "", scope: str = "in this run") -> str:
    """One line when the step did not pay: both speedups, and `why` if known; "" when it
    paid or there is no previous step. `scope`: "in this run", or "on this machine" once
    several races agreed (speed_judge.judge_speed)."""
    if step_pays(speedups):
        return ""
    gain = speedups.reference / speedups.previous
    verb = "ran slower than" if gain < 1 else f"gained only {gain:.2f}x over"
    return (
        f"this step did not pay {scope}: its reference ({speedups.reference:.3g}x) {verb} "
        f"the previous step's ({speedups.previous:.3g}x), so the bar follows the reference "
        f"(it asks {ABOVE_PREVIOUS:g}x the previous step only where the reference reaches "
        f"{PAYS:.2f}x it) and the loop-nest test checks the technique" + (f"; {why}" if why else "")
    )


def bar(
    speedups: Speedups, cap: float | None = None, why: str = "", scope: str = "in this run"
) -> Bar:
    """The bar for this run (see the module's docstring for the rule); `why` explains a
    step that does not pay (the manifest's `no_gain`), `scope` where it did not."""
    relative = HEADROOM * speedups.reference
    reference_part = f"{HEADROOM:g} of the reference's {speedups.reference:.3g}x in this run"
    value, reason = relative, reference_part
    if cap is not None and cap <= relative:
        value = cap
        reason = f"the task's cap of {cap:g}x (the reference reached {speedups.reference:.3g}x)"
    above = None if speedups.previous is None else ABOVE_PREVIOUS * speedups.previous
    if above is not None and min(above, relative) > value:  # above the cap
        previous_part = (
            f"{ABOVE_PREVIOUS:g}x the previous task's reference ({speedups.previous:.3g}x in "
            "this run): a schedule without this task's technique must not pass"
        )
        if above <= relative:
            value, reason = above, previous_part
        else:  # the previous step's figure is too close to the reference's to demand
            value = relative
            reason = (
                f"{reference_part}, above the cap: {previous_part}, but "
                f"{ABOVE_PREVIOUS:g}x of it ({above:.3g}x) would be above the reference's "
                f"own margin"
            )
    return Bar(value, reason, step_note(speedups, why, scope))


def judge(
    speedups: Speedups, applied: Bar, where: str, measured: str, advice: str, details: str = ""
) -> Bar:
    """Raise a KataFailure naming the figures and the next step, or return the bar met.

    `applied` is this run's bar (`bar`); `measured` says what the ratios are ("the speed
    of the naive schedule on tvm (4x32x512 float32 matmul)"); `details` adds what the
    caller knows (% of peak, milliseconds, the BLAS kernel).
    """
    if speedups.learner >= applied.value:
        return applied
    lines = [
        f"{where}: {speedups.learner:.3g}x {measured}, below this run's bar of "
        f"{applied.value:.3g}x: {applied.reason}.",
        f"  same run: yours {speedups.learner:.3g}x, the reference solution "
        f"{speedups.reference:.3g}x"
        + (
            f", the previous task's reference {speedups.previous:.3g}x" if speedups.previous else ""
        ),
    ]
    if details:
        lines.append(f"  {details}")
    if applied.step_note:
        lines.append(f"  {applied.step_note}")
    lines.append(f"  next: {advice}")
    raise SpeedBelowBar("\n".join(lines))


class SpeedBelowBar(KataFailure):
    """The learner's kernel is correct but slower than this run's bar."""


#: Kata 08's tiers: the learner's speed over numpy's, reported beside its verdict.
TIERS = ((1.0, "gold: numpy's speed or better"), (0.75, "silver"), (0.5, "bronze"))


def tier(ratio: float) -> str:
    return next((name for bound, name in TIERS if ratio >= bound), "below bronze (0.5x)")
