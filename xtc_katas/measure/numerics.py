"""Run a compiled kernel on harness-made inputs and compare with numpy.

XTC checks nothing about the arrays it is given: a wrong dtype or shape gives a wrong
answer with return code 0, or crashes the process. So the inputs are the problem's own
(Problem.inputs: its shapes and dtype, C-contiguous; tests/test_problems.py), and the
output starts as NaN so an untouched output fails.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from xtc_katas.kata.problems import Problem
from xtc_katas.measure.isolation import run_isolated

#: The input sets a kernel is checked on (make_inputs): plain, of both signs, and edge values.
INPUTS = ("random", "signed", "edge")


def run(module: Any, problem: Problem, inputs: list[np.ndarray]) -> np.ndarray:
    """Run the kernel once on the problem's inputs, in a child process; return its output."""
    return run_isolated(_run_once, module, problem, inputs)


def _run_once(module: Any, problem: Problem, inputs: list[np.ndarray]) -> np.ndarray:
    out = np.full(problem.output_shape, np.nan, dtype=problem.dtype)
    evaluator = module.get_evaluator(
        parameters=(inputs, [out]), repeat=1, number=1, min_repeat_ms=0, validate=False
    )
    _, code, message = evaluator.evaluate()
    if code != 0:
        raise RuntimeError(f"the kernel returned error code {code}: {message}")
    return out


def mismatch(actual: np.ndarray, problem: Problem, inputs: list[np.ndarray]) -> str | None:
    """None when `actual` is the problem's result within rounding, else its worst element."""
    expected = problem.reference(inputs)
    if actual.shape != expected.shape:
        return f"output shape {actual.shape}, expected {expected.shape}"
    bound = problem.error_bound(inputs)
    error = np.abs(actual.astype(np.float64) - expected)
    error = np.where(np.isnan(actual), np.inf, error)
    excess = error / bound
    if np.all(excess <= 1.0):
        return None
    where = np.unravel_index(int(np.argmax(excess)), excess.shape)
    wrong = int(np.count_nonzero(excess > 1.0))
    idx = tuple(int(i) for i in where)
    return (
        f"{wrong} of {actual.size} outputs wrong; worst at {idx}: got {actual[where]!r}, "
        f"expected {expected[where]:.6g} (error {error[where]:.3g}, allowed {bound[where]:.3g})"
        + ("; NaN means the kernel never wrote that element" if np.isnan(actual[where]) else "")
    )


def outputs(module: Any, problem: Problem, kinds: tuple[str, ...]) -> dict[str, np.ndarray]:
    """The module's output on each input set of `kinds` (problem.inputs(kind, seed=n)),
    all from one child process."""
    sets = {kind: problem.inputs(kind, seed=seed) for seed, kind in enumerate(kinds)}
    return run_isolated(_run_each, module, problem, sets)


def _run_each(module: Any, problem: Problem, sets: dict[str, list[np.ndarray]]) -> dict:
    return {kind: _run_once(module, problem, inputs) for kind, inputs in sets.items()}


def assert_outputs(found: dict[str, np.ndarray], problem: Problem, backend: str) -> None:
    """Assert each output of `outputs()` is the problem's result on its inputs: compared
    here, wherever the kernel ran (a learner's module runs in its own process)."""
    for seed, (kind, actual) in enumerate(found.items()):
        report = mismatch(actual, problem, problem.inputs(kind, seed=seed))
        if report:
            raise AssertionError(
                f"wrong result on {backend} for {problem.label}, {kind} inputs: {report}"
            )


def assert_computes(
    module: Any, problem: Problem, backend: str, kinds: tuple[str, ...] = INPUTS
) -> None:
    """Assert the module computes the problem on several input sets."""
    assert_outputs(outputs(module, problem, kinds), problem, backend)
