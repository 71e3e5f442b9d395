"""Import the module under test: the learner's stub in katas/ or the reference in solutions/.

Kata folders start with digits, so they are not packages: modules are imported by path,
under a name that says which side they come from, so both sides can be loaded at once
(the `report` command measures the learner's and the reference schedule side by side).
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType

from xtc_katas import ROOT
from xtc_katas.kata.manifest import Kata

#: Set to 1 (by `pytest --solutions`, tox or CI) to test solutions/ instead of katas/.
SOLUTIONS_ENV = "XTC_KATAS_SOLUTIONS"


def solutions_selected() -> bool:
    return os.environ.get(SOLUTIONS_ENV, "") not in ("", "0", "false", "no")


def module_path(kata: Kata, solution: bool | None = None, root: Path = ROOT) -> Path:
    if solution is None:
        solution = solutions_selected()
    return kata.solution_path(root) if solution else kata.stub_path(root)


def load(kata: Kata, solution: bool | None = None, root: Path = ROOT) -> ModuleType:
    """Import (afresh) the kata's module from katas/ or solutions/."""
    path = module_path(kata, solution, root)
    side = "solution" if path.is_relative_to(root / "solutions") else "kata"
    name = f"xtc_katas_{side}_{kata.id}"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module
