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


#: What a grading's copy leaves out: the maintainers' tests and tools, which no graded run
#: needs. The learner's code runs in that copy, and tests/answers.py is a catalogue of
#: right answers (outside red team, round 4: kata 04 passed 5/5 by loading it).
MAINTAINERS = ("tests", "tests_open", "tools", ".ci")


def copy_repository(destination: Path, graded: bool = False) -> Path:
    """A working copy of the repository (no VCS, venv or caches) under `destination`;
    `graded`: a grading's, without MAINTAINERS.

    Run it with `python -m ...` from the copy's root, so the copy's own xtc_katas is
    imported and every path resolves inside the copy.
    """

    def ignored(folder: str, names: list[str]) -> set[str]:
        left = set(IGNORED(folder, names))
        if graded and Path(folder) == ROOT:
            left |= set(MAINTAINERS) & set(names)
        return left

    copy = destination / "xtc-katas"
    shutil.copytree(ROOT, copy, ignore=ignored)
    return copy


def learner_env(**extra: str) -> dict[str, str]:
    """This process's environment minus the XTC_KATAS_* switches (e.g. --solutions' own)
    and CI (which shows the instructor's lines, plugin/options.learner_view): what a
    learner's run in a copy of the repository sees. `extra` adds variables."""
    kept = {k: v for k, v in os.environ.items() if not k.startswith("XTC_KATAS_") and k != "CI"}
    return {**kept, **extra}
