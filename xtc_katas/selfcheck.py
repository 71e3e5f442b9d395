"""CI's third direction: the solutions copied over the stubs, run as a learner runs them.

`--solutions` imports solutions/ directly; this instead copies the repository, puts each
reference module where the learner's stub is, and runs plain `pytest katas` and
`xtc-katas status` there: the exact experience of a learner who solved everything.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from xtc_katas import ROOT
from xtc_katas.manifest import find, katas

IGNORED = shutil.ignore_patterns(
    ".git", ".venv", ".tox", ".pytest_cache", ".hypothesis", "__pycache__", "*.egg-info"
)


def copy_repository(destination: Path) -> Path:
    """A working copy of the repository (no VCS, venv or caches) under `destination`.

    Run it with `python -m ...` from the copy's root, so the copy's own xtc_katas is
    imported and every path resolves inside the copy.
    """
    copy = destination / "xtc-katas"
    shutil.copytree(ROOT, copy, ignore=IGNORED)
    return copy


def solved_copy(destination: Path) -> Path:
    """A copy of the repository with every stub replaced by its reference solution."""
    copy = copy_repository(destination)
    for kata in katas():
        shutil.copyfile(kata.solution_path(copy), kata.stub_path(copy))
    return copy


def learner_env(**extra: str) -> dict[str, str]:
    """This process's environment minus the XTC_KATAS_* switches (e.g. --solutions' own):
    what a learner's run in a copy of the repository sees. `extra` adds variables."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("XTC_KATAS_")}
    return {**env, **extra}


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


def main(argv: list[str]) -> int:
    with tempfile.TemporaryDirectory(prefix="xtc-katas-solved-") as tmp:
        copy = solved_copy(Path(tmp))
        # `python -m` from the copy imports the copy's xtc_katas, so paths resolve there.
        run = [sys.executable, "-m", "pytest", "katas", *argv]
        print("$", " ".join(run), f"(in a solved copy: {copy})", flush=True)
        code = subprocess.run(run, cwd=copy).returncode
        if code != 0:
            return code
        status = subprocess.run(
            [sys.executable, "-m", "xtc_katas", "status", "--no-run"],
            cwd=copy,
            capture_output=True,
            text=True,
        )
        print(status.stdout)
        expected = f"{len(katas())} of {len(katas())} katas passing."
        if expected not in status.stdout:
            print(f"selfcheck: the status table of the solved copy does not say {expected!r}")
            return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
