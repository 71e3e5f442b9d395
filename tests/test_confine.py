"""The learner's worker's confinement (checks/confine.py), in a process of its own.

Not a grading: `confine_learner` runs in a child Python, as in a graded worker, and what
it then sees is compared with what the harness beside it sees.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from xtc_katas.checks.confine import CONFINE_ENV

#: In the child: confined, a file written in /tmp (argv[1]) and one in "." (its working
#: folder, the harness's), which the harness must not see; then what /tmp and "." hold.
CHILD = """
import json, os, sys
from xtc_katas.checks.confine import confine_learner
confine_learner()
open(sys.argv[1], "w").write("mine")
open("relative.so", "w").write("mine")
print(json.dumps({"tmp": sorted(os.listdir("/tmp")), "cwd": os.getcwd(),
                  "here": sorted(os.listdir("."))}))
"""


def test_the_learners_worker_has_a_tmp_of_its_own_and_leaves_the_harness_folder() -> None:
    """The outside red team's door (issue 55): the harness compiles the kernels it races
    into pytest's folders in /tmp and loads them later from there; a worker sharing /tmp
    (or forked in such a folder, its working folder) swapped them for its own library."""
    probe = subprocess.run(["unshare", "--user", "--mount", "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"no user namespaces here: {probe.stderr.decode().strip()}")
    with tempfile.TemporaryDirectory(dir="/tmp", prefix="xtc-katas-harness-") as harness:
        Path(harness, "kernel.so").write_text("the harness's")
        planted = Path(f"{harness}.planted")
        env = {**os.environ, CONFINE_ENV: json.dumps({"hide": [], "read_only": []})}
        try:
            done = subprocess.run([sys.executable, "-c", CHILD, str(planted)], cwd=harness,
                                  env=env, capture_output=True, text=True)  # fmt: skip
            assert not planted.exists()
        finally:
            planted.unlink(missing_ok=True)  # left by a worker that shares /tmp
        assert done.returncode == 0, done.stderr
        seen = json.loads(done.stdout)
        assert seen["tmp"] == sorted([planted.name, os.path.basename(harness)]), seen
        assert seen["cwd"] == harness and seen["here"] == ["relative.so"], seen  # made again
        assert sorted(os.listdir(harness)) == ["kernel.so"]
        assert Path(harness, "kernel.so").read_text() == "the harness's"
