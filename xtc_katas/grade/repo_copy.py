"""Copies of the repository to run as a learner runs them: a grading node's (grading_job),
CI's solved copy and the harness tests' (tools/copy_runs.py runs python or pytest in one).

A harness test of what the learner sees (a planted mistake, a renamed function, a new
kata) edits a copy, never the repository, then runs `python -m pytest` or `xtc-katas`
there, so the copy's own files and its xtc_katas are the ones that run.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from xtc_katas import ROOT

# tmp*: TVM's ./tmpXXXX/ scratch directories (one per schedule it applies, left behind
# when a compile fails); one that vanishes mid-copy fails shutil.copytree.
IGNORED = shutil.ignore_patterns(
    ".git", ".venv", ".tox", ".pytest_cache", ".hypothesis", "__pycache__", "*.egg-info", "tmp*"
)


def copy_repository(destination: Path) -> Path:
    """A working copy of the repository (no VCS, venv or caches) under `destination`.

    Run it with `python -m ...` from the copy's root, so the copy's own xtc_katas is
    imported and every path resolves inside the copy.
    """
    copy = destination / "xtc-katas"
    shutil.copytree(ROOT, copy, ignore=IGNORED)
    return copy


def learner_env(**extra: str) -> dict[str, str]:
    """This process's environment minus the XTC_KATAS_* switches (e.g. --solutions' own)
    and CI (which shows the instructor's lines, plugin/options.learner_view): what a
    learner's run in a copy of the repository sees. `extra` adds variables."""
    kept = {k: v for k, v in os.environ.items() if not k.startswith("XTC_KATAS_") and k != "CI"}
    return {**kept, **extra}
