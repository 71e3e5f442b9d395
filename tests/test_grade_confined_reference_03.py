"""Found by the outside red team (issue 55, item 6), not an attack: kata 03's reference
solution, graded confined, fails two of its three tasks for reasons of the harness.

On main at f039541 (`xtc-katas grade` on a folder holding solutions/03_compile's file,
--backend mlir, confined, as root), `compile_baseline`'s two "computes" tests failed with
"OSError: [Errno 30] Read-only file system: '/grading/cache/modules'" (the learner's
worker compiles there, and XTC's host runtime is looked for in the grading's own cache,
read-only to the worker), and `percent_of_peak_of`'s "a real module agrees" test with
"percent_observed gave back something the harness does not take across the process
boundary (a xtc_katas.measure.observed.Observation is not plain data)". An honest learner
gets the same.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from xtc_katas import ROOT
from xtc_katas.grade import submissions
from xtc_katas.grade.grade_command import grade_class
from xtc_katas.kata.manifest import find

COMPILING = find(3)


@pytest.mark.slow
@pytest.mark.perf  # kata 03's races
@pytest.mark.timeout(900)
def test_kata_03_reference_graded_confined_fails_nothing_for_the_harness(tmp_path: Path) -> None:
    sub = tmp_path / "subs" / "reference"
    path = sub / "katas" / COMPILING.id / f"{COMPILING.module}.py"
    path.parent.mkdir(parents=True)
    shutil.copyfile(COMPILING.solution_path(ROOT), path)
    out = tmp_path / "out"
    outcome = grade_class(
        [submissions.Entry(str(sub))], out, [COMPILING], backend="mlir", timeout=900
    )
    assert not outcome.grader_errors, outcome
    doc = json.loads((out / "reference" / "grading.json").read_text())
    harness = [
        (t["name"], t["message"][:300])
        for t in doc["tests"]
        if "Read-only file system" in t["message"] or "is not plain data" in t["message"]
    ]
    assert not harness, harness
