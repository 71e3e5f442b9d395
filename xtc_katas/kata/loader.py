"""Import the module under test: the learner's stub in katas/ or the reference in solutions/.

Kata folders start with digits, so they are not packages: modules are imported by path,
under a name that says which side they come from, so both sides can be loaded at once
(the `report` command measures the learner's and the reference schedule side by side).
"""

from __future__ import annotations

import ast
import importlib.util
import os
import re
import sys
from pathlib import Path
from types import ModuleType

from xtc_katas import ROOT
from xtc_katas.kata.failures import KataFailure
from xtc_katas.kata.manifest import Kata

#: Set to 1 (by `pytest --solutions`, tox or CI) to test solutions/ instead of katas/.
SOLUTIONS_ENV = "XTC_KATAS_SOLUTIONS"


def solutions_selected() -> bool:
    return os.environ.get(SOLUTIONS_ENV, "") not in ("", "0", "false", "no")


def module_path(kata: Kata, solution: bool | None = None, root: Path = ROOT) -> Path:
    solution = solutions_selected() if solution is None else solution
    return kata.solution_path(root) if solution else kata.stub_path(root)


def reference_reads(path: Path) -> list[str]:
    """Lines of the learner's module that import or name the reference solutions (the
    tests would then judge the reference). The harness is not off limits: the learner's
    module runs in a process of its own (checks/learner.py), where changing it changes no
    verdict."""
    try:
        tree = ast.parse(path.read_text(), filename=str(path))
    except (OSError, SyntaxError):
        return []  # importing it reports the syntax error itself
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            names = [f"{module}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            # importlib.import_module("..."), a path to solutions/...: a dotted or
            # slashed name, not a word in a docstring
            names = re.findall(r"\bsolutions[./][\w./]*", node.value)
        else:
            continue
        name = next((n for n in names if re.split(r"[./]", n)[0] == "solutions"), None)
        if name:
            found.append(f"line {node.lineno}: {name!r}")
    return found


def load(kata: Kata, solution: bool | None = None, root: Path = ROOT) -> ModuleType:
    """Import (afresh) the kata's module from katas/ or solutions/; a learner's module
    that reads the reference is refused (reference_reads)."""
    path = module_path(kata, solution, root)
    side = "solution" if path.is_relative_to(root / "solutions") else "kata"
    if side == "kata" and (reads := reference_reads(path)):
        raise KataFailure(
            f"{kata.id}: {path.name} reads what the tests judge you against "
            f"({'; '.join(reads)}): the tests would then measure the reference solution, "
            "not your code. Remove it and write your own"
        )
    name = f"xtc_katas_{side}_{kata.id}"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        # Compiled from the source every time, never from a __pycache__ file: Python
        # trusts a .pyc whose source has the same size and mtime second, so a save that
        # keeps the size within a second of the last run (`watch`) would run old code.
        exec(compile(path.read_bytes(), path, "exec"), module.__dict__)
    except BaseException:
        del sys.modules[name]
        raise
    return module
