"""Submissions made from the suite itself, for the benchmark and the grader's tests: a
kata's module with some tasks solved (the reference solution's functions) and the others
as the stub left them, laid out as a learner's checkout (katas/NN_name/<module>.py)."""

from __future__ import annotations

import ast
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

from xtc_katas import ROOT
from xtc_katas.kata.manifest import Kata, find


def _functions(source: str) -> dict[str, tuple[int, int]]:
    """Each top-level function's (first line, last line), from 0, decorators included."""
    spans = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef):
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)]) - 1
            spans[node.name] = (first, node.end_lineno or node.lineno)
    return spans


def partly_solved(kata: Kata, solved: Collection[str] | None = None) -> str:
    """The reference solution with every task outside `solved` (None: all solved) put
    back as the stub has it: a learner half-way through the kata."""
    solution = kata.solution_path(ROOT).read_text()
    if solved is None:
        return solution
    stub = kata.stub_path(ROOT).read_text()
    stub_lines, stub_spans = stub.splitlines(), _functions(stub)
    lines, spans = solution.splitlines(), _functions(solution)
    unsolved = [t.function for t in kata.tasks if t.function not in solved]
    for name in sorted(unsolved, key=lambda n: spans[n][0], reverse=True):
        first, last = spans[name]
        stub_first, stub_last = stub_spans[name]
        lines[first:last] = stub_lines[stub_first:stub_last]
    return "\n".join(lines) + "\n"


def with_function(source: str, name: str, code: str) -> str:
    """`source` with its top-level function `name` replaced by `code` (a whole def):
    a planted mistake."""
    lines = source.splitlines()
    first, last = _functions(source)[name]
    lines[first:last] = code.strip("\n").splitlines()
    return "\n".join(lines) + "\n"


def write(folder: Path, modules: Mapping[str, str]) -> Path:
    """A learner's checkout in `folder` holding `modules` ({kata id: its module's source})."""
    for kata_id, source in modules.items():
        kata = find(kata_id)
        path = folder / "katas" / kata.id / f"{kata.module}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source)
    return folder


def graded_alone(tmp_path: Path, kata: Kata, name: str, source: str, **options: Any) -> dict:
    """The grading.json of submission `name`, whose only file is `kata`'s module,
    `source`, graded alone on MLIR through the real LocalCluster (as `xtc-katas grade`,
    confined where it can be); `options` go to grade_class (a kata's timeout)."""
    import json

    from xtc_katas.grade import submissions
    from xtc_katas.grade.grade_command import grade_class

    sub = write(tmp_path / "subs" / name, {kata.id: source})
    out = tmp_path / "out"
    outcome = grade_class([submissions.Entry(str(sub))], out, [kata], backend="mlir", **options)
    assert not outcome.grader_errors, outcome
    return json.loads((out / name / "grading.json").read_text())
