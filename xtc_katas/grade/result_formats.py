"""A grading (grading.json, the grader's own record) as the results.json a platform reads.

Exercism's test-runner interface, version 3: `version`, `status` (pass, fail, error),
`message`, and `tests[]` with `name`, `status`, `message`, `output` and `task_id` (here
the kata's task function the test checks). It is extended with what a performance grade
needs: each speed test's figures (`speed`: speedup over its baseline, the reference's,
the bar, % of peak), the node that graded it (host, worker, CPU, load), the suite's
commit and the submission's hash.

Gradescope's: `score` and `max_score` (one point per task), `tests[]` (one per task),
`output`, and a `leaderboard` of each speed test's speedup over the reference.
"""

from __future__ import annotations

import math
from typing import Any

FORMATS = ("exercism", "gradescope")


def speed(figures: list[dict[str, Any]]) -> dict[str, Any] | None:
    """A speed test's figures, named alike for every kata (kata 08 races numpy, not the
    naive kernel), or None for a test that raced nothing."""
    if not figures:
        return None
    last = figures[-1]
    over_numpy = "speedup_vs_numpy" in last

    def number(key: str) -> float | None:
        """A figure the tables compute with: a finite number, or None (the record is the
        sandbox's data: a string there stopped the whole class, red team round 2)."""
        value = last.get(key)
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        return value if ok and math.isfinite(value) else None

    over = last.get("over", "naive")
    return {
        "over": over if isinstance(over, str) else "naive",  # numpy, your schedule unfused
        "speedup": number("speedup_vs_numpy" if over_numpy else "speedup"),
        "reference": number("reference_vs_numpy" if over_numpy else "reference_speedup"),
        "bar": number("bar"),
        "percent_of_peak": number("percent_of_peak"),
        "figures": last,
    }


def exercism(doc: dict[str, Any]) -> dict[str, Any]:
    tests = [
        {
            "name": t["name"],
            "status": t["status"],
            "message": t["message"],
            "output": t["output"],
            "task_id": t["tasks"][0] if t["tasks"] else "",
            "kata": t["kata"],
            "backend": t["backend"],
            "speed": speed(t["figures"]),
        }
        for t in doc["tests"]
        if t["status"] != "skip"
    ]
    return {
        "version": 3,
        "status": doc["status"],
        "message": doc["message"],
        "tests": tests,
        "grading_status": doc["grading_status"],
        "katas": doc["katas"],
        "notes": doc["notes"],
        "confined": doc.get("confined", False),
        "secure_cluster": doc.get("secure_cluster"),  # None: graded before it was said
        "node": doc["node"],
        "suite_commit": doc["suite_commit"],
        "submission_hash": doc["submission_hash"],
    }


def gradescope(doc: dict[str, Any]) -> dict[str, Any]:
    tests = []
    for kata in doc["katas"]:
        for function, state in kata["tasks"].items():
            failing = [
                f"{t['name']}: {t['message']}"
                for t in doc["tests"]
                if function in t["tasks"] and t["status"] in ("fail", "error")
            ]
            tests.append(
                {
                    "name": f"{kata['kata']} › {function}",
                    "score": 1.0 if state == "passed" else 0.0,
                    "max_score": 1.0,
                    "status": "passed" if state == "passed" else "failed",
                    "output": "\n\n".join(failing) or kata["cause"],
                }
            )
    leaderboard = []
    for t in doc["tests"]:
        figures = speed(t["figures"])
        if figures and figures["speedup"] and figures["reference"]:
            ratio = figures["speedup"] / figures["reference"]
            leaderboard.append({"name": f"{t['name']} vs reference", "value": round(ratio, 3)})
    node = doc["node"]
    where = f"graded on {node.get('hostname', '?')} ({node.get('cpu', '?')})" if node else ""
    return {
        "score": sum(t["score"] for t in tests),
        "max_score": float(sum(len(k["tasks"]) for k in doc["katas"])),
        "output": "\n".join(x for x in (doc["message"], where) if x),
        "tests": tests,
        "leaderboard": leaderboard,
    }


def render(doc: dict[str, Any], fmt: str) -> dict[str, Any]:
    """results.json's content in `fmt` (one of FORMATS)."""
    return gradescope(doc) if fmt == "gradescope" else exercism(doc)
