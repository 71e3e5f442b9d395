"""python, pytest and a learner's edit in a copy of the repository (grade/repo_copy.py
makes it): what the harness tests, selfcheck and flakecheck run there, as a learner would."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from xtc_katas.grade.repo_copy import learner_env
from xtc_katas.kata.manifest import find


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
