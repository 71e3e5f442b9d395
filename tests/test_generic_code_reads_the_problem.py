"""Generic harness code reads the task's Problem (its dims, reductions, vector and tile
axes, scheduled node, inputs), never a matmul's names: a kata on a convolution, or on a
problem shape not written yet, gets the same checks in its own words (issue 24).

Read from the syntax tree, so that prose (docstrings, messages that quote an example)
stays free: what is flagged is code that names an axis, a node or a problem itself.
"""

import ast
from pathlib import Path

from xtc_katas import ROOT

#: A matmul's axes, nodes and inputs, as whole string constants.
MATMUL_NAMES = {"i", "j", "k", "A", "B", "C"}
#: Names of one problem or of one kata's function, where generic code should read the
#: task's problem or the manifest.
SPECIFIC = {
    "Matmul",
    "Conv2D",
    "TUTORIAL",
    "SPLIT",
    "LARGE",
    "STRATEGY",
    "CHALLENGE",
    "FUSION",
    "GEMM",
    "RESNET18_02",
    "RESNET18_02_ROWS8",
    "schedule_large",
    "matmul",
}
#: Where such names belong, and why.
ALLOWED = {
    # the problems themselves
    "xtc_katas/kata/problems.py": "defines them",
    # kata 12's own race: its cost model is fitted to one strategy on one problem
    "xtc_katas/checks/optimizer_race.py": "kata 12's cost model, fitted on STRATEGY",
    # NumpyRace.numpy_round times np.matmul: kata 08's yardstick. To read
    # Problem.numpy_call as kata 08's test does, once the timing work on main lands.
    "xtc_katas/measure/timing.py": "NumpyRace's np.matmul",
}


def specific_names(path: Path, root: Path = ROOT) -> list[str]:
    """Each place in `path` whose code names a matmul's axis, node or input, a problem,
    or one kata's function, as "file:line: name", in the order of the file."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        name = None
        if isinstance(node, ast.Constant) and node.value in MATMUL_NAMES:
            name = repr(node.value)
        elif isinstance(node, ast.Name) and node.id in SPECIFIC:
            name = node.id
        elif isinstance(node, ast.Attribute) and node.attr in SPECIFIC:
            name = f".{node.attr}"
        elif isinstance(node, ast.alias) and node.name in SPECIFIC:
            name = f"import {node.name}"
        if name:
            found.append((getattr(node, "lineno", 0), getattr(node, "col_offset", 0), name))
    return [f"{path.relative_to(root)}:{line}: {name}" for line, _, name in sorted(found)]


def test_generic_code_names_no_matmul_and_no_problem():
    found = [
        line
        for path in sorted([*(ROOT / "xtc_katas").rglob("*.py"), *(ROOT / "tools").rglob("*.py")])
        if str(path.relative_to(ROOT)) not in ALLOWED
        for line in specific_names(path)
    ]
    assert not found, "read the task's Problem instead:\n" + "\n".join(found)


def test_the_scan_finds_what_it_looks_for(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text(
        "from xtc_katas.kata.problems import CHALLENGE\n"
        "def check(nest, axis='j'):\n"
        "    return module.schedule_large, ('k',)\n"
        '"""A docstring may say i, j and k."""\n'
    )
    found = [line.split(": ", 1)[1] for line in specific_names(sample, tmp_path)]
    assert found == ["import CHALLENGE", "'j'", ".schedule_large", "'k'"], found
