"""Kata 03 — compile a graph, evaluate it, read the code XTC generated.

Fill in the three functions below, then run:  pytest katas/03_compile
(add --backend mlir for a faster loop). The lesson is in README.md next to this file;
`xtc-katas hint 3` gives hints one by one.

`Backend` is XTC's backend class (xtc.backends.mlir.Backend or xtc.backends.tvm.Backend):
the tests call your functions with each one. `dump_file` is a fresh path for the compiled
module: always pass it on, never reuse one.
"""

from typing import Any

from xtc.graphs.xtc.graph import XTCGraph


def compile_baseline(graph: XTCGraph, Backend: Any, dump_file: str) -> Any:
    """Compile `graph` with XTC's default loop nest (no transformation); return the module.

    XTC's pipeline (README.md, "XTC's primitives"): a backend bound to the graph, its
    scheduler, the frozen schedule, a compiler that writes a loadable library to
    `dump_file`, and the module it returns. The baseline records no transformation.
    """
    raise NotImplementedError


def percent_of_peak_of(module: Any, fmas: int, peak_fmas_per_s: float) -> float:
    """Evaluate `module` and return its speed as a % of the single-core peak.

    A module's evaluator runs it and returns (times, code, message): seconds per call,
    0 on success, and what went wrong otherwise. Use the time that best estimates the
    kernel's own speed, and kata 01's formula. Raise RuntimeError (with XTC's message)
    when the evaluation reports an error, even if it returned times.
    """
    raise NotImplementedError


def generated_code(graph: XTCGraph, Backend: Any, dump_file: str, what: str) -> str:
    """Compile the baseline of `graph` and return, as text, what XTC prints for `what`.

    `what` is one of "source_ir", "transformed_ir", "assembly"; anything else is a
    ValueError, raised before anything is compiled. The compiler prints each stage when
    asked (README.md lists its print options); the two backends print to different
    streams (README.md, the XTC 0.3.2 box).
    """
    raise NotImplementedError
