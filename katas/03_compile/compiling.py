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
    """Compile `graph` with XTC's default loop nest (no transformation); return the module."""
    raise NotImplementedError


def percent_of_peak_of(module: Any, fmas: int, peak_fmas_per_s: float) -> float:
    """Evaluate `module` and return its speed as a % of the single-core peak.

    Raise RuntimeError (with XTC's message) when the evaluation reports an error.
    """
    raise NotImplementedError


def generated_code(graph: XTCGraph, Backend: Any, dump_file: str, what: str) -> str:
    """Compile the baseline of `graph` and return, as text, what XTC prints for `what`.

    `what` is one of "source_ir", "transformed_ir", "assembly"; anything else is a
    ValueError.
    """
    raise NotImplementedError
