"""Copies of the repository to run as a learner runs them: CI's solved copy and tests/.

A harness test of what the learner sees (a planted mistake, a renamed function, a new
kata) edits a copy, never the repository, then runs `python -m pytest` or `xtc-katas`
there, so the copy's own files and its xtc_katas are the ones that run.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from xtc_katas import ROOT
from xtc_katas.kata.manifest import find

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


def run_python(
    repo: Path,
    *args: str,
    env: dict[str, str] | None = None,
    timeout: float = 300,
    stdin: str | None = None,
) -> tuple[int, str]:
    """`python *args` in a copy of the repository, as a learner runs it: (exit code, all
    output). `env` defaults to learner_env()."""
    result = subprocess.run(
        [sys.executable, *args],
        cwd=repo,
        env=learner_env() if env is None else env,
        capture_output=True,
        text=True,
        timeout=timeout,
        input=stdin,
    )
    return result.returncode, result.stdout + result.stderr


def run_pytest(repo: Path, *args: str, timeout: float = 300) -> tuple[int, str]:
    """pytest in a copy of the repository, as a learner runs it: (exit code, all output)."""
    return run_python(repo, "-m", "pytest", *args, timeout=timeout)


def edit_stub(repo: Path, number: int, before: str, code: str) -> None:
    """A learner's edit, for tests of what the learner then sees: `code` goes into kata
    `number`'s stub in the copy `repo`, just before the first `before` (a docstring)."""
    stub = find(number).stub_path(repo)
    source = stub.read_text()
    if before not in source:
        raise ValueError(f"{stub.name} has no {before!r} to edit before")
    stub.write_text(source.replace(before, code + before, 1))
