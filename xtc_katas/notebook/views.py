"""What the notebook shows, as plain HTML strings and PNG bytes: no marimo here, so the
app's cells stay short."""

from __future__ import annotations

import html
import io
import textwrap
import time

from xtc_katas.kata import progress
from xtc_katas.kata.manifest import Kata
from xtc_katas.notebook.runner import KataRun, RunResult, TaskVerdict

#: A coloured badge per state (text, not emoji: a browser without an emoji font shows
#: emoji as boxes).
COLOURS = {"passed": "#2b8a3e", "failed": "#c92a2a", "not run": "#868e96"}
MARK = {
    state: f'<span style="background:{colour};color:white;padding:0 0.4em;border-radius:3px;'
    f'font-size:0.85em">{state}</span>'
    for state, colour in COLOURS.items()
}
#: Messages wrap at the pane's edge instead of running off it.
WRAPPED = '<pre style="white-space:pre-wrap;overflow-wrap:anywhere">'


def task_list(kata: Kata) -> str:
    """The kata's tasks and their states, from the record `xtc-katas status` reads."""
    results = progress.read()
    states = progress.task_states(kata, results)
    status = progress.kata_status(kata, results)
    rows = "".join(
        f'<li class="xtc-task" data-task="{t.function}" data-state="{states[t.function]}">'
        f"{MARK[states[t.function]]} <code>{t.function}</code></li>"
        for t in kata.tasks
    )
    head = (
        f"<b>{kata.id}</b>: {status.state}, {status.tasks_passed}/{len(kata.tasks)} tasks "
        "passed (as <code>xtc-katas status</code> reads it)"
    )
    return f'<div class="xtc-tasks">{head}<ul>{rows}</ul></div>'


def _verdict(task: TaskVerdict) -> str:
    failures = "".join(
        f'<div class="xtc-failure"><small>{html.escape(nodeid)}</small>'
        f"{WRAPPED}{html.escape(message)}</pre></div>"
        for nodeid, message in task.failures[:1]
    )
    more = len(task.failures) - 1
    if more > 0:
        failures += f"<small>(and {more} more failing test{'s' * (more > 1)})</small>"
    return (
        f'<div class="xtc-verdict" data-task="{task.function}" data-state="{task.state}">'
        f"{MARK[task.state]} <code>{task.function}</code>{failures}</div>"
    )


def verdicts(result: RunResult, kata: Kata) -> str:
    """Each task's verdict, with the first failure's text exactly as pytest printed it."""
    if result.cancelled:
        return f"<p><b>{kata.id}</b>: run cancelled after {result.seconds:.0f} s.</p>"
    head = f"<p><b>{kata.id}</b>: tests finished in {result.seconds:.1f} s</p>"
    body = "".join(_verdict(t) for t in result.tasks)
    problem = ""
    if result.problem:
        tail = "\n".join(result.output.splitlines()[-25:])
        problem = (
            f'<div class="xtc-problem"><b>{html.escape(result.problem)}</b>'
            f"{WRAPPED}{html.escape(tail)}</pre></div>"
        )
    return head + problem + body


def speed_chart(result: RunResult, kata: Kata, machine_line: str) -> bytes | None:
    """A PNG: per backend, each raced task's speedup, the reference's and the bar; the
    CPU in the title (a figure means little without its machine). None: nothing raced."""
    figures = result.figures
    if not figures:
        return None
    # A Figure of its own: no pyplot, whose global state (current figure, backend) the
    # kernel's other cells and threads share.
    from matplotlib.figure import Figure

    backends = sorted({b for _, b, _ in figures})
    fig = Figure(figsize=(max(7.0, 5.2 * len(backends)), 3.6))
    axes = fig.subplots(1, len(backends), squeeze=False)
    for ax, backend in zip(axes[0], backends, strict=True):
        rows = [(task, f) for task, b, f in figures if b == backend]
        names = [task for task, _ in rows]
        y = range(len(rows))
        yours = [f.get("speedup", 0.0) for _, f in rows]
        reference = [f.get("reference_speedup", 0.0) for _, f in rows]
        mine = ax.barh([i + 0.2 for i in y], yours, height=0.4, label="yours", color="#2b8a3e")
        theirs = ax.barh(
            [i - 0.2 for i in y], reference, height=0.4, label="reference", color="#999"
        )
        for bars in (mine, theirs):  # each bar's figure: nobody has to eyeball the bar
            ax.bar_label(bars, fmt="%.3gx", fontsize=7, padding=2)
        for i, (_, f) in enumerate(rows):
            if isinstance(f.get("bar"), (int, float)):
                ax.plot([f["bar"]] * 2, [i - 0.45, i + 0.45], color="#c92a2a", lw=2)
                ax.annotate(
                    f"bar {f['bar']:.3g}x", (f["bar"], i + 0.45), fontsize=7, color="#c92a2a"
                )
        ax.margins(x=0.2)  # room for the labels
        ax.plot([], [], color="#c92a2a", lw=2, label="bar (to pass)")
        ax.set_yticks(list(y), names)
        over = {t.baseline for t in kata.tasks if t.function in names}
        ax.set_xlabel(f"speedup over {' / '.join(sorted(over))} (higher is better)")
        ax.set_title(backend.upper())
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=3, fontsize=8, frameon=False)
    fig.suptitle(textwrap.fill(f"{kata.id}, measured on {machine_line}", 90), fontsize=8)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    out = io.BytesIO()
    fig.savefig(out, format="png", dpi=110)
    return out.getvalue()


def progress_text(run: KataRun) -> str:
    of = f"/{run.total}" if run.total is not None else ""
    seconds = time.time() - run.started
    tail = "\n".join(run.lines[-12:])
    return (
        f'<p class="xtc-progress">running: {run.done_tests}{of} tests done, {seconds:.0f} s</p>'
        f"{WRAPPED}{html.escape(tail)}</pre>"
    )
