"""Tests of kata 08, on both backends, for 1 and 2 threads (and every core the machine has).
`@pytest.mark.task("schedule_large")` names the function; its `task` fixture builds
`schedule_large(sch, threads)` on the 1024^3 matmul, `task.on_threads(n)` for n threads.

The numerics test compares yours with numpy in float64. The perf test races yours, the
reference solution and numpy's own matmul side by side on this machine, every side on
exactly `threads` threads (xtc_katas/checks/speed_judge.py): the reference's figure is
its speed relative to numpy, yours the reference's times your speed relative to the
reference, round by round. Yours must reach this run's bar (speed_rule.py): HEADROOM x
the reference's figure, capped by the manifest. The tier (bronze, silver, gold vs numpy) is
the headline. pytest-benchmark keeps numpy's own time on this machine from run to run
(`--benchmark-autosave`, `--benchmark-compare`): the yardstick's history, not a verdict.

The naive 1024^3 schedule is never run: it takes ~6 s a call.
"""

import os

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from xtc_katas.kata.problems import CHALLENGE

THREADS = sorted({1, 2, os.cpu_count() or 1})
#: The failure's "next:" line when yours is too slow.
ADVICE = (
    "a register micro-kernel sized for this CPU's vector registers and FMA units, A and B "
    "packed (TVM), blocks of k whose panel of B stays in L2: the lesson's section "
    "'The idea: Goto's layers'; on MLIR, a parallel loop may cost more than it gains: "
    "time yours with and without it"
)


@pytest.fixture(params=THREADS, ids=[f"{t}thread" for t in THREADS])
def threads(request):
    return request.param


@pytest.mark.task("schedule_large")
def test_schedule_large_computes_the_matmul(task, threads):
    # Signed and edge inputs: at 1024^3 each check costs seconds, and random positive
    # inputs find nothing those two miss.
    task.on_threads(threads).assert_computes(inputs=("signed", "edge"))


@pytest.mark.perf
@pytest.mark.task("schedule_large")
def test_schedule_large_keeps_up_with_numpy(task, threads, benchmark):
    task.on_threads(threads).assert_speed(advice=ADVICE)
    a, b = CHALLENGE.inputs()
    out = np.empty(CHALLENGE.output_shape, np.float32)
    with threadpool_limits(limits=threads, user_api="blas"):
        benchmark.pedantic(np.matmul, args=(a, b), kwargs={"out": out}, rounds=3, warmup_rounds=1)
