"""The learner's progress: real test results, kept in pytest's own cache.

Nothing here is hand-edited state. Each learner-mode pytest run records, per test, its
outcome, any performance figures, and a hash of the kata's module at that moment; the
status table reads them back and treats a result as stale once the module changed.
Deleting .pytest_cache loses only this history.
"""

from __future__ import annotations

import hashlib
import json
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
