"""tools/planted_class.py compares the honest grades by what a grading decides, never by
a race's noise (the tool itself grades for minutes: it is run by hand, docs/grading.md)."""

from __future__ import annotations

import copy

from tools import planted_class


def _results(status: str, speedup: float) -> dict:
    test = {"name": "t", "status": status, "message": f"{speedup:.1f}x over naive",
            "output": "", "speed": {"speedup": speedup}}  # fmt: skip
    return {"status": status, "node": {"load": speedup}, "tests": [test],
            "katas": [{"kata": "04", "verdict": status, "seconds": speedup}]}  # fmt: skip


def test_a_grade_is_the_same_whatever_its_races_read_but_not_whatever_its_verdict() -> None:
    one = _results("pass", 20.5)
    assert planted_class.stable(one) == planted_class.stable(_results("pass", 31.0))
    assert planted_class.stable(one) != planted_class.stable(_results("fail", 20.5))
    before = copy.deepcopy(one)
    planted_class.stable(one)
    assert one == before
