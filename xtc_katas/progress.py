"""The learner's progress: real test results, kept in pytest's own cache, and what they
mean for each kata (`kata_status`, read by `xtc-katas status`, `watch` and `report`).

Nothing here is hand-edited state. Each learner-mode pytest run records, per test, its
outcome, any performance figures, and a hash of the kata's module at that moment; the
status table reads them back and treats a result as stale once the module changed.
Deleting .pytest_cache loses only this history.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from xtc_katas import ROOT
from xtc_katas.manifest import Kata

CACHE_KEY = "xtc-katas/results"


def cache_file(root: Path = ROOT, key: str = CACHE_KEY) -> Path:
    """Where pytest's cache provider stores `key` (config.cache.set writes this file)."""
    return root / ".pytest_cache" / "v" / key


def module_hash(kata: Kata, root: Path = ROOT) -> str:
    path = kata.stub_path(root)
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16] if path.exists() else ""


def read(root: Path = ROOT) -> dict[str, dict[str, Any]]:
    try:
        return json.loads(cache_file(root).read_text())
    except (OSError, ValueError):
        return {}


def kata_results(kata: Kata, results: dict[str, dict[str, Any]], root: Path = ROOT) -> dict:
    """This kata's recorded results, only those recorded against its current module."""
    current = module_hash(kata, root)
    return {
        nodeid: r
        for nodeid, r in results.items()
        if r.get("kata") == kata.id and r.get("module_hash") == current
    }


@dataclass
class KataStatus:
    kata: Kata
    state: str  # "passing", "failing", "not started", "not run"
    tasks_passed: int
    first_failure: dict[str, Any] | None
    best_percent_of_peak: float | None
    best_speedup: float | None


def kata_status(kata: Kata, results: dict[str, dict[str, Any]]) -> KataStatus:
    mine = kata_results(kata, results)
    if not mine:
        return KataStatus(kata, "not run", 0, None, None, None)
    passed = 0
    for task in kata.tasks:
        outcomes = [r["outcome"] for nodeid, r in mine.items() if task.function in nodeid]
        passed += bool(outcomes) and all(o == "passed" for o in outcomes)
    failures = [r for r in mine.values() if r["outcome"] != "passed"]
    figures = [f for r in mine.values() if r["outcome"] == "passed" for f in r.get("perf", [])]
    percents = [f["percent_of_peak"] for f in figures if "percent_of_peak" in f]
    speedups = [f["speedup"] for f in figures if "speedup" in f]
    if not failures:
        state = "passing"
    elif all("not implemented yet" in r.get("message", "") for r in failures) and not passed:
        state = "not started"
    else:
        state = "failing"
    return KataStatus(
        kata,
        state,
        passed,
        failures[0] if failures else None,
        max(percents) if percents else None,
        max(speedups) if speedups else None,
    )
