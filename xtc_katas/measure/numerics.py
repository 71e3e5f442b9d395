"""Run a compiled kernel on harness-made inputs and compare with numpy.

XTC checks nothing about the arrays it is given: a wrong dtype or shape gives a wrong
answer with return code 0, or crashes the process. So every array is checked against the
problem before any kernel runs, and the output starts as NaN so an untouched output fails.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from xtc_katas.kata.problems import Problem
from xtc_katas.measure.isolation import run_isolated


class KernelArgumentError(TypeError):
    """An array that does not fit the compiled kernel: running it would corrupt results."""


def check_arrays(arrays: list[np.ndarray], shapes: list[tuple[int, ...]], dtype: str) -> None:
    """Refuse arrays that are not exactly what the compiled kernel expects."""
    if len(arrays) != len(shapes):
        raise KernelArgumentError(f"expected {len(shapes)} arrays, got {len(arrays)}")
    for n, (x, shape) in enumerate(zip(arrays, shapes, strict=True)):
        if not isinstance(x, np.ndarray):
            raise KernelArgumentError(f"array {n} is a {type(x).__name__}, not a numpy array")
        if x.dtype != np.dtype(dtype):
            raise KernelArgumentError(f"array {n} has dtype {x.dtype}, the kernel takes {dtype}")
        if x.shape != tuple(shape):
            raise KernelArgumentError(f"array {n} has shape {x.shape}, the kernel takes {shape}")
        if not x.flags.c_contiguous:
            raise KernelArgumentError(f"array {n} is not C-contiguous: use np.ascontiguousarray")


def run(module: Any, problem: Problem, inputs: list[np.ndarray]) -> np.ndarray:
    """Run the kernel once on checked inputs, in a child process; return its output."""
    check_arrays(inputs, problem.input_shapes, problem.dtype)
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
    """None when `actual` is A@B within rounding, else a report of the worst element."""
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


def assert_computes(
    module: Any, problem: Problem, backend: str, kinds: tuple[str, ...] = ("random", "edge")
) -> None:
    """Assert the module computes the problem on several input sets."""
    for seed, kind in enumerate(kinds):
        inputs = problem.inputs(kind, seed=seed)
        report = mismatch(run(module, problem, inputs), problem, inputs)
        if report:
            raise AssertionError(
                f"wrong result on {backend} for {problem.label}, {kind} inputs: {report}"
            )
