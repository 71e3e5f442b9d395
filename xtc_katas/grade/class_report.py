"""The class at a glance: class.csv (one row per submission) and class.html, one page that
needs nothing but a browser (inline CSS, plots as inline PNG), with the table and what an
instructor would rather look at than read: each task's pass rate, the spread of speedups
over the reference per speed test, and which nodes graded what. Both flag what an
instructor should look into: the same work under two ids, and two submissions that
wanted one id.
"""

from __future__ import annotations

import base64
import csv
import html
import io
import time
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from xtc_katas.grade.result_formats import speed
from xtc_katas.kata.manifest import Kata

FAIRNESS = (
    "Speed verdicts are ratios: the learner's kernel raced side by side with the reference "
    "on the node that graded it, so they compare across nodes. % of peak is per node: "
    "each node's own peak, not comparable across different CPUs."
)


def node_label(node: dict[str, Any]) -> str:
    return f"{node.get('hostname', '?')} ({node.get('worker', '?')})" if node else "-"


#: A kata's verdicts that hold no work of the learner's (the same untouched stubs are no
#: copy).
NO_WORK = ("missing", "not attempted", "refused")


def flags(
    docs: Sequence[dict[str, Any]], notes: Mapping[str, Sequence[str]] | None = None
) -> dict[str, list[str]]:
    """What to look into, per id: `notes` (the grader's: an id collision), and the same
    `submission_hash` (the same stub files) under other ids, where there is work."""
    found: dict[str, list[str]] = {i: list(n) for i, n in (notes or {}).items() if n}
    by_hash: dict[str, list[str]] = defaultdict(list)
    for doc in docs:
        if any(k["verdict"] not in NO_WORK for k in doc["katas"]):
            by_hash[doc.get("submission_hash", "")].append(doc["id"])
    for digest, ids in by_hash.items():
        for sub_id in ids if digest and len(ids) > 1 else []:
            others = ", ".join(i for i in ids if i != sub_id)
            found.setdefault(sub_id, []).append(
                f"the same submission as {others} (submission_hash {digest[:12]})"
            )
    return found


def write_csv(
    path: Path,
    docs: Sequence[dict[str, Any]],
    katas: Sequence[Kata],
    flagged: Mapping[str, Sequence[str]] | None = None,
) -> None:
    """id, name, status, grading_status, tasks passed per kata, total, node, message,
    flags (`flagged`, from flags())."""
    flagged = flagged or {}
    with path.open("w", newline="", encoding="utf-8") as handle:
        out = csv.writer(handle)
        header = ["id", "name", "status", "grading_status"]
        out.writerow([*header, *(k.id for k in katas), "total", "node", "message", "flags"])
        for doc in docs:
            passed = {k["kata"]: k["tasks_passed"] for k in doc["katas"]}
            row = [doc["id"], doc["name"], doc["status"], doc["grading_status"]]
            row += [passed.get(k.id, 0) for k in katas]
            row += [sum(passed.values()), node_label(doc["node"]), doc["message"]]
            out.writerow([*row, "; ".join(flagged.get(doc["id"], ()))])


def _png(figure: Any) -> str:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100, bbox_inches="tight")
    return base64.b64encode(buffer.getvalue()).decode()


def _figure(rows: int) -> tuple[Any, Any]:
    from matplotlib.figure import Figure

    figure = Figure(figsize=(7.5, 0.9 + 0.32 * max(rows, 2)))
    return figure, figure.add_subplot()


def pass_rate_plot(docs: Sequence[dict[str, Any]], katas: Sequence[Kata]) -> str:
    """Each task's share of graded submissions that pass it."""
    graded = [d for d in docs if d["grading_status"] == "graded"]
    labels, passing = [], []
    for kata in katas:
        for task in kata.tasks:
            labels.append(f"{kata.id} › {task.function}")
            passing.append(
                sum(
                    k["tasks"].get(task.function) == "passed"
                    for d in graded
                    for k in d["katas"]
                    if k["kata"] == kata.id
                )
            )
    rates = [100 * n / len(graded) if graded else 0 for n in passing]
    figure, axes = _figure(len(labels))
    bars = axes.barh(labels[::-1], rates[::-1], color="#3b7dd8")
    axes.bar_label(bars, [f" {n}/{len(graded)}" for n in passing[::-1]], fontsize=8)
    axes.set_xlim(0, 100)
    axes.set_xlabel(f"% of the {len(graded)} graded submissions that pass the task")
    return _png(figure)


def _race(test: dict[str, Any]) -> str:
    return f"{test['kata']} › {(test['tasks'] or ['?'])[0]} [{test['backend']}]"


def speedup_plot(docs: Sequence[dict[str, Any]]) -> str | None:
    """Per speed test: each submission's speedup over the reference (dots) and the bar it
    had to reach, over the reference too (the bar is set per run: its median). A test is
    named by its task and backend, or by its own name where a task has two races."""
    raced = [(t, f) for d in docs for t in d["tests"] if (f := speed(t["figures"]))]
    names_of: dict[str, set[str]] = defaultdict(set)
    for test, _ in raced:
        names_of[_race(test)].add(test["name"])
    ratios: dict[str, list[float]] = defaultdict(list)
    bars: dict[str, list[float]] = defaultdict(list)
    for test, figures in raced:
        if not (figures["speedup"] and figures["reference"]):
            continue
        name = _race(test)
        if len(names_of[name]) > 1:
            name = test["name"].split("::", 1)[-1]
        ratios[name].append(figures["speedup"] / figures["reference"])
        if figures["bar"]:
            bars[name].append(figures["bar"] / figures["reference"])
    if not ratios:
        return None
    names = list(ratios)  # in the order the tests ran
    figure, axes = _figure(len(names))
    for row, name in enumerate(names):
        values = ratios[name]
        spread = [row + 0.25 * ((i % 5) - 2) / 2 for i in range(len(values))]
        axes.scatter(values, spread, color="#2a9d5b", alpha=0.8, s=28, zorder=3)
        if bars[name]:
            middle = sorted(bars[name])[len(bars[name]) // 2]
            axes.plot([middle, middle], [row - 0.4, row + 0.4], color="#c0392b", lw=2)
    axes.axvline(1.0, color="#888", ls="--", lw=1)
    axes.set_yticks(range(len(names)), [n if len(n) < 70 else n[:67] + "..." for n in names])
    axes.set_ylim(-0.6, len(names) - 0.4)
    axes.invert_yaxis()
    axes.set_xlabel("speedup / the reference's speedup (dashed: as fast; red: the bar)")
    return _png(figure)


def nodes_plot(docs: Sequence[dict[str, Any]]) -> str:
    """How many submissions each node (host and CPU) graded."""
    from matplotlib.ticker import MaxNLocator

    counts = Counter(
        f"{d['node'].get('hostname', '?')}\n{d['node'].get('cpu', '')}"
        if d["node"].get("cpu")
        else "not graded (grader error)"
        for d in docs
    )
    labels = sorted(counts)
    figure, axes = _figure(int(1.5 * len(labels)) + 1)
    axes.barh(labels[::-1], [counts[label] for label in labels[::-1]], color="#8e6cc4")
    axes.xaxis.set_major_locator(MaxNLocator(integer=True))
    axes.set_xlabel("submissions graded")
    return _png(figure)


STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 1200px; color: #222; }
h1 { font-size: 1.6em; } h2 { font-size: 1.2em; margin-top: 1.6em; }
table { border-collapse: collapse; width: 100%; font-size: 13px; }
th, td { border-bottom: 1px solid #ddd; padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: #f3f3f3; }
td.num { text-align: center; white-space: nowrap; }
.pass { background: #e3f5e8; } .fail { background: #fdf1dc; } .error { background: #fbe3e1; }
.grader { background: #e6e6e6; font-style: italic; }
.rule { border-left: 4px solid #3b7dd8; padding: 0.4em 0.8em; background: #f4f8fd; }
.message { color: #555; max-width: 38em; } .flags { color: #a33; max-width: 24em; }
figure { margin: 1em 0; } img { max-width: 100%; }
"""


def _cell(kata: dict[str, Any] | None) -> str:
    if kata is None:
        return "<td class='num'>-</td>"
    title = html.escape(kata["cause"] or kata["verdict"], quote=True)
    shown = f"{kata['tasks_passed']}/{len(kata['tasks'])}"
    if kata["verdict"] not in ("passed", "failed"):
        shown += f"<br><small>{html.escape(kata['verdict'])}</small>"
    return f"<td class='num' title='{title}'>{shown}</td>"


def table(
    docs: Sequence[dict[str, Any]],
    katas: Sequence[Kata],
    flagged: Mapping[str, Sequence[str]] | None = None,
) -> str:
    head = "".join(f"<th>{k.id}</th>" for k in katas)
    rows = []
    flagged = flagged or {}
    for doc in docs:
        flag = "<br>".join(html.escape(f) for f in flagged.get(doc["id"], ()))
        by_kata = {k["kata"]: k for k in doc["katas"]}
        total = sum(k["tasks_passed"] for k in doc["katas"])
        css = "grader" if doc["grading_status"] != "graded" else doc["status"]
        rows.append(
            f"<tr class='{css}' data-id='{html.escape(doc['id'], quote=True)}'>"
            f"<td>{html.escape(doc['id'])}</td><td>{html.escape(doc['name'])}</td>"
            f"<td>{doc['status']}</td><td>{doc['grading_status']}</td>"
            + "".join(_cell(by_kata.get(k.id)) for k in katas)
            + f"<td class='num'>{total}/{sum(len(k.tasks) for k in katas)}</td>"
            f"<td>{html.escape(node_label(doc['node']))}</td>"
            f"<td class='message'>{html.escape(doc['message'])}</td>"
            f"<td class='flags'>{flag}</td></tr>"
        )
    return (
        "<table id='class'><thead><tr><th>id</th><th>name</th><th>status</th>"
        f"<th>grading</th>{head}<th>total</th><th>node</th><th>verdict</th>"
        "<th>look into</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def write_html(
    path: Path,
    docs: Sequence[dict[str, Any]],
    katas: Sequence[Kata],
    suite: str,
    flagged: Mapping[str, Sequence[str]] | None = None,
) -> None:
    statuses = Counter(
        d["status"] if d["grading_status"] == "graded" else "grader error" for d in docs
    )
    counts = ", ".join(f"{n} {s}" for s, n in sorted(statuses.items()))
    plots = [("pass rate per task", pass_rate_plot(docs, katas))]
    speeds = speedup_plot(docs)
    if speeds:
        plots.append(("speedups over the reference per speed test", speeds))
    plots.append(("submissions graded per node", nodes_plot(docs)))
    figures = "".join(
        f"<figure><figcaption><h2>{title}</h2></figcaption>"
        f"<img alt='{title}' src='data:image/png;base64,{data}'></figure>"
        for title, data in plots
    )
    if not speeds:
        figures += "<p class='no-speed'>No speed test was graded (no race in these katas).</p>"
    cpus = sorted({d["node"]["cpu"] for d in docs if d["node"].get("cpu")})
    page = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>xtc-katas: the class</title>
<style>{STYLE}</style></head><body>
<h1>xtc-katas: the class</h1>
<p>{len(docs)} submissions ({counts}), katas {", ".join(k.id for k in katas)}; suite at
<code>{html.escape(suite)}</code>; written {time.strftime("%Y-%m-%d %H:%M")}.
CPUs: {html.escape("; ".join(cpus) or "-")}.</p>
<p class="rule">{FAIRNESS}</p>
{table(docs, katas, flagged)}
{figures}
</body></html>
"""
    path.write_text(page, encoding="utf-8")
