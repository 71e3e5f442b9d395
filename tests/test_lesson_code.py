"""The code a lesson shows runs: kata 04's split example and kata 05's specs compile on
both backends and compute right, and kata 05's printed nest is what XTC prints (a
teacher's read found kata 04's example tested nowhere)."""

from __future__ import annotations

import re

from xtc_katas import ROOT
from xtc_katas.checks.schedule import fresh_scheduler
from xtc_katas.kata.problems import Matmul
from xtc_katas.measure import numerics
from xtc_katas.measure.workdir import Workdir
from xtc_katas.tools import lesson_blocks


def blocks(kata: str) -> list[tuple[str, str]]:
    """(language, text) of each fenced block of a kata's lesson, in order."""
    text = (ROOT / "katas" / kata / "README.md").read_text()
    return re.findall(r"^```(\w*)\n(.*?)^```", text, re.M | re.S)


def compiles_and_computes(impl, sch, problem, backend, tmp_path) -> None:
    tmp_path.mkdir(exist_ok=True)
    module = Workdir(tmp_path).compile(impl, sch.schedule())
    numerics.assert_computes(module, problem, backend.name, ("random",))


def test_kata04s_split_example_compiles_and_computes(backend, tmp_path):
    (code,) = [text for lang, text in blocks("04_scheduling") if lang == "python"]
    problem = Matmul(6, 32, 64)  # "`split` on `i` of a 6-row matmul"
    impl, sch = fresh_scheduler(backend, problem)
    exec(code, {"sch": sch})
    compiles_and_computes(impl, sch, problem, backend, tmp_path)


def test_kata05s_specs_compile_compute_and_print_their_nest(backend, tmp_path):
    from xtc.schedules.descript import descript_scheduler

    found = blocks("05_descript")
    specs = [eval(text) for lang, text in found if lang == "python"]
    (listing,) = [text for lang, text in found if lang == "" and text.startswith("loop")]
    problem = Matmul(8, 48, 64)  # "A spec for an 8×48×64 matmul"
    for number, spec in enumerate(specs):
        impl, sch = fresh_scheduler(backend, problem)
        descript_scheduler(
            scheduler=sch, node_name=problem.scheduled_node, abstract_dims=problem.dims, spec=spec
        )
        if number == 0:
            printed = sch.get_loop_nest().root_node.pretty_print()
            assert printed.strip() == listing.strip(), printed
        compiles_and_computes(impl, sch, problem, backend, tmp_path / str(number))


# --- blocks generated from the code (xtc_katas/tools/lesson_blocks.py) -------------------


def test_every_generated_block_is_what_the_code_generates_now():
    # The rule's numbers (speed_rule.py) and the reference's loop nests: a stale block is
    # named with its file and line.
    stale = [where for path in lesson_blocks.texts() for where in lesson_blocks.stale(path)[1]]
    assert not stale, (
        "stale generated blocks (`python -m xtc_katas.tools.lesson_blocks` rewrites them):\n"
        + "\n".join(stale)
    )


def test_a_changed_rule_names_the_file_that_quotes_it(monkeypatch):
    from xtc_katas.checks import speed_rule

    readme = ROOT / "README.md"
    assert lesson_blocks.stale(readme)[1] == []
    monkeypatch.setattr(speed_rule, "RULE", speed_rule.RULE.replace("0.7", "0.8"))
    new, (where,) = lesson_blocks.stale(readme)
    assert where.startswith("README.md:") and where.endswith(": rule")
    assert speed_rule.RULE in new
