"""CI's third direction: the solutions copied over the stubs, run as a learner runs them.

`--solutions` imports solutions/ directly; this instead copies the repository, puts each
reference module where the learner's stub is, and runs `pytest katas` (in two runs, RUNS)
and `xtc-katas status` there: the experience of a learner who solved everything.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from tools.copy_runs import run_python
from xtc_katas.grade.repo_copy import copy_repository
from xtc_katas.kata.manifest import katas

#: Two runs, as a learner may run them: the speed races alone on the cores, then every
#: other test in two pytest-xdist workers (`pytest -n 2`, which leaves perf tests out).
#: The races come first: kata 08's reference, the module under test here, chooses its
#: kernel on its first run on a machine by timing candidates, which it may not do beside
#: another worker (timing.require_own_cores); the second run finds its choice cached.
RUNS = (("-m", "perf"), ("-m", "not perf", "-n", "2"))


def main(argv: list[str]) -> int:
    with tempfile.TemporaryDirectory(prefix="xtc-katas-solved-") as tmp:
        copy = copy_repository(Path(tmp))
        for kata in katas():  # every stub replaced by its reference solution
            shutil.copyfile(kata.solution_path(copy), kata.stub_path(copy))
        for selection in RUNS:
            # `python -m` from the copy imports the copy's xtc_katas: paths resolve there.
            run = [sys.executable, "-m", "pytest", "katas", *selection, *argv]
            print("$", shlex.join(run), f"(in a solved copy: {copy})", flush=True)
            code = subprocess.run(run, cwd=copy).returncode
            if code != 0:
                return code
        _, status = run_python(copy, "-m", "xtc_katas", "status")
        print(status)
        expected = f"{len(katas())} of {len(katas())} katas passing."
        if expected not in status:
            print(f"selfcheck: the status table of the solved copy does not say {expected!r}")
            return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
