"""Kata 03 — reference solution."""

import contextlib
import io
from typing import Any

from xtc.graphs.xtc.graph import XTCGraph

PRINT_OPTIONS = {
    "source_ir": "print_source_ir",
    "transformed_ir": "print_transformed_ir",
    "assembly": "print_assembly",
}


def _compile(graph: XTCGraph, Backend: Any, dump_file: str, **options: Any) -> Any:
    backend = Backend(graph)
    scheduler = backend.get_scheduler()
    schedule = scheduler.schedule()
    compiler = backend.get_compiler(dump_file=dump_file, shared_lib=True, **options)
    return compiler.compile(schedule)


def compile_baseline(graph: XTCGraph, Backend: Any, dump_file: str) -> Any:
    """Compile `graph` with XTC's default loop nest (no transformation)."""
    return _compile(graph, Backend, dump_file)


def percent_of_peak_of(module: Any, fmas: int, peak_fmas_per_s: float) -> float:
    """Evaluate `module`; its fastest call as a % of the single-core peak."""
    # Five measurements (the default is one), each of calls run back to back for 20 ms:
    # interference only adds time, so the fastest of them reads the kernel.
    times, code, message = module.get_evaluator(repeat=5, min_repeat_ms=20).evaluate()
    if code != 0 or not times:
        raise RuntimeError(f"evaluation failed with code {code}: {message}")
    return 100.0 * fmas / min(times) / peak_fmas_per_s


def generated_code(graph: XTCGraph, Backend: Any, dump_file: str, what: str) -> str:
    """What XTC prints for `what`: MLIR writes to stderr, TVM to stdout; capture both."""
    if what not in PRINT_OPTIONS:
        raise ValueError(f"what must be one of {sorted(PRINT_OPTIONS)}, got {what!r}")
    text = io.StringIO()
    with contextlib.redirect_stdout(text), contextlib.redirect_stderr(text):
        _compile(graph, Backend, dump_file, **{PRINT_OPTIONS[what]: True})
    return text.getvalue()
