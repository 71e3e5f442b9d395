"""The kata loop as a marimo app: lesson, hints, tasks, the stub in an editor, run, charts.

Started by `xtc-katas notebook [N]` (server.py). The app imports nothing of XTC: the
tests run through pytest in a subprocess (runner.py), the `show` and `explore` views
through the xtc-katas command in a subprocess. The stub file on disk stays the one
source of truth (stub_sync.py).

Headless (CI, tests): `marimo export html app.py -o out.html -- --kata 4 --autorun`
runs the kata's tests once while the notebook is executed, so the verdicts and the
chart are in the exported page.
"""

import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium", app_title="xtc-katas notebook")


@app.cell
def _():
    import os
    import subprocess
    import sys
    import time

    import marimo as mo

    from xtc_katas import ROOT
    from xtc_katas.checks.kinds import tasks_where
    from xtc_katas.kata import progress
    from xtc_katas.kata.manifest import find
    from xtc_katas.kata.run_lock import RunBusy, RunLock
    from xtc_katas.measure import machine
    from xtc_katas.notebook import stub_sync, views
    from xtc_katas.notebook.runner import KataRun

    args = mo.cli_args()
    chosen = args.get("kata") or os.environ.get("XTC_KATAS_NOTEBOOK_KATA")
    kata = find(str(chosen)) if chosen else progress.current_kata()
    # flags without a value: marimo's parser gives them "" (present) or nothing
    autorun = "autorun" in args
    autorun_quick = "quick" in args
    autorun_backends = (str(args["backend"]),) if args.get("backend") else ()
    autorun_task = str(args.get("task") or "")
    machine_line = machine.describe()
    #: The tasks `xtc-katas show` and `explore` apply to come from the kinds' registry
    #: (checks/kinds.py, KINDS), as those commands read it; it imports nothing of XTC.
    #: The run in progress (or the last one) and its rendered result: kept across cells
    #: without re-running them (a run lives longer than any cell's execution).
    current = {"run": None, "shown": None, "shown_html": None, "save": 0, "run_clicks": 0}
    return (
        KataRun,
        ROOT,
        RunBusy,
        RunLock,
        autorun,
        autorun_backends,
        autorun_quick,
        autorun_task,
        current,
        kata,
        machine_line,
        mo,
        progress,
        stub_sync,
        subprocess,
        sys,
        tasks_where,
        time,
        views,
    )


@app.cell
def _(kata, mo):
    _lesson = kata.folder() / "README.md"
    _text = _lesson.read_text() if _lesson.exists() else ""
    mo.vstack(
        [
            mo.md(f"# {kata.id}: {kata.title}"),
            mo.accordion({f"The lesson (katas/{kata.id}/README.md)": mo.md(_text)}),
        ]
    )
    return


@app.cell
def _(kata, mo):
    get_loaded, set_loaded = mo.state(None)
    get_note, set_note = mo.state(None)
    get_done, set_done = mo.state(None)
    hint_task = mo.ui.dropdown(
        [t.function for t in kata.tasks], value=kata.tasks[0].function, label="hint for"
    )
    hint_button = mo.ui.run_button(label="next hint")
    # Counting buttons, not run_buttons: a click that lands while the kernel is busy
    # (a select changed, a save re-ran the editor) still counts, once.
    save_button = mo.ui.button(value=0, on_click=lambda n: n + 1, label="Save", kind="success")
    reload_button = mo.ui.run_button(label="Reload from disk", kind="warn")
    run_button = mo.ui.button(value=0, on_click=lambda n: n + 1, label="Run tests", kind="success")
    quick = mo.ui.switch(label="quick (no speed races)")
    backend = mo.ui.dropdown(["both", "mlir", "tvm"], value="both", label="backend")
    only_task = mo.ui.dropdown(
        ["all tasks", *(t.function for t in kata.tasks)], value="all tasks", label="run"
    )
    tick = mo.ui.refresh(options=["1s"], default_interval="1s")
    return (
        backend,
        get_done,
        get_loaded,
        get_note,
        hint_button,
        hint_task,
        only_task,
        quick,
        reload_button,
        run_button,
        save_button,
        set_done,
        set_loaded,
        set_note,
        tick,
    )


@app.cell
def _(hint_button, hint_task, kata, mo, progress):
    _hint = ""
    if hint_button.value:
        _task = kata.task(hint_task.value)
        _index, _text = progress.next_hint(kata, _task, advance=True)
        _hint = f"**{_task.function}, hint {_index + 1}/{len(_task.hints)}:** {_text}"
    mo.vstack([mo.md("## Hints, one at a time"), mo.hstack([hint_task, hint_button]), mo.md(_hint)])
    return


@app.cell
def _(get_done, get_loaded, kata, mo, views):
    get_done(), get_loaded()
    mo.vstack([mo.md("## Tasks"), mo.Html(views.task_list(kata))])
    return


@app.cell
def _(get_loaded, kata, set_loaded, stub_sync):
    if get_loaded() is None or get_loaded().kata_id != kata.id:
        set_loaded(stub_sync.load(kata))
    return


@app.cell
def _(get_loaded, kata, mo):
    _loaded = get_loaded()
    editor = mo.ui.code_editor(
        value=_loaded.text if _loaded else "",
        language="python",
        min_height=320,
        label=f"katas/{kata.id}/{kata.stub_path().name}",
    )
    return (editor,)


@app.cell
def _(current, editor, get_loaded, kata, save_button, set_loaded, set_note, stub_sync):
    if save_button.value > current["save"]:
        current["save"] = save_button.value
        try:
            _saved, _backup = stub_sync.save(kata, get_loaded(), editor.value)
        except stub_sync.SaveRefused as _refused:
            set_note(("danger", str(_refused)))
        else:
            set_loaded(_saved)
            _kept = f"; your previous version: {_backup.name}" if _backup else " (unchanged)"
            set_note(("success", f"saved {kata.stub_path().name}{_kept}"))
    return


@app.cell
def _(kata, reload_button, set_loaded, set_note, stub_sync):
    if reload_button.value:
        set_loaded(stub_sync.load(kata))
        set_note(("info", f"reloaded {kata.stub_path().name} from disk"))
    return


@app.cell
def _(get_loaded, kata, mo, reload_button, stub_sync, tick):
    tick
    _loaded = get_loaded()
    _banner = None
    if _loaded is not None and stub_sync.changed_on_disk(_loaded):
        _banner = mo.callout(
            mo.vstack(
                [
                    mo.md(
                        f"**{kata.stub_path().name} changed on disk** (another editor, "
                        "`xtc-katas reset`, git). Saving is refused until you reload it: "
                        "reloading replaces the editor's text with the file's."
                    ),
                    reload_button,
                ]
            ),
            kind="warn",
        )
    _banner
    return


@app.cell
def _(editor, get_note, mo, save_button):
    _note = get_note()
    _items = [mo.md("## Your code"), editor, save_button]
    if _note:
        _items.append(mo.callout(mo.plain_text(_note[1]), kind=_note[0]))
    mo.vstack(_items)
    return


@app.cell
def _(
    KataRun,
    RunBusy,
    autorun,
    autorun_backends,
    autorun_quick,
    autorun_task,
    backend,
    only_task,
    current,
    get_loaded,
    kata,
    quick,
    run_button,
    set_note,
    stub_sync,
):
    _backends = () if backend.value == "both" else (backend.value,)
    _task = "" if only_task.value == "all tasks" else only_task.value
    if autorun and current["run"] is None:
        _backends, _task = autorun_backends, autorun_task
    _clicked = run_button.value > current["run_clicks"]
    current["run_clicks"] = run_button.value
    _busy_here = current["run"] is not None and current["run"].running
    if _clicked and _busy_here:
        set_note(("warn", f"{kata.id}: a run is in progress: cancel it or wait for it"))
    elif _clicked or (autorun and current["run"] is None):
        _loaded = get_loaded()
        try:
            _quick = quick.value or (autorun and autorun_quick)
            current["run"] = KataRun(kata, quick=_quick, backends=_backends, task=_task).start()
        except RunBusy as _busy:
            set_note(("warn", f"{kata.id}: not run: {_busy}"))
        else:
            if _loaded is not None and stub_sync.changed_on_disk(_loaded):
                set_note(("warn", "the run tests the file on disk, changed since loaded"))
            if autorun:
                current["run"].wait()
    launched = current["run"]
    return (launched,)


@app.cell
def _(current, mo):
    def _cancel(_):
        if current["run"] is not None:
            current["run"].cancel()

    cancel_button = mo.ui.button(label="Cancel run", kind="danger", on_click=_cancel)
    return (cancel_button,)


@app.cell
def _(backend, cancel_button, mo, only_task, quick, run_button):
    _controls = [run_button, only_task, quick, backend, cancel_button]
    mo.vstack([mo.md("## Run"), mo.hstack(_controls, justify="start")])
    return


@app.cell
def _(mo, tick):
    mo.hstack([mo.md("<small>live updates</small>"), tick], justify="start")
    return


@app.cell
def _(current, get_done, launched, mo, set_done, tick, time, views):
    tick, launched
    _run = current["run"]
    _view = None
    if _run is not None and _run.result is None:
        _view = mo.Html(
            views.progress_text(_run.done_tests, _run.total, time.time() - _run.started, _run.lines)
        )
    elif _run is not None and get_done() is not _run:
        set_done(_run)
    _view
    return


@app.cell
def _(current, get_done, kata, launched, machine_line, mo, views):
    get_done(), launched
    _run = current["run"]
    _view = mo.md("Press **Run tests**: pytest runs this kata's tests on the saved file.")
    if _run is not None and _run.result is not None:
        if current["shown"] is not _run:
            _png = views.speed_chart(_run.result, kata, machine_line)
            _parts = [mo.Html(views.verdicts(_run.result, kata))]
            if _png is not None:
                _parts.append(mo.image(_png, alt=views.chart_alt(kata, machine_line)))
            current["shown"], current["shown_html"] = _run, mo.vstack(_parts)
        _view = current["shown_html"]
    _view
    return


@app.cell
def _(kata, mo, tasks_where):
    _shown = [t.function for t in tasks_where(kata, "shown")]
    show_function = mo.ui.dropdown(_shown, value=_shown[0] if _shown else None, label="task")
    show_backend = mo.ui.dropdown(["mlir", "tvm"], value="mlir", label="backend")
    show_button = mo.ui.run_button(label="Show loop nest, IR, assembly")
    return show_backend, show_button, show_function


@app.cell
def _(ROOT, kata, mo, show_backend, show_button, show_function, subprocess, sys):
    _tabs = None
    if show_function.value is None:
        _out = mo.md(f"{kata.id} has no schedule to show (no task of it builds one).")
    else:
        _out = mo.hstack([show_function, show_backend, show_button], justify="start")
    if show_button.value and show_function.value:
        _views = {}
        for _label, _flag in (("loop nest", "--nest"), ("IR", "--ir"), ("assembly", "--asm")):
            _done = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "xtc_katas",
                    "show",
                    str(kata.number),
                    show_function.value,
                    _flag,
                    f"--backend={show_backend.value}",
                ],
                cwd=ROOT,
                capture_output=True,
                text=True,
            )
            _views[_label] = mo.plain_text((_done.stdout + _done.stderr)[-60000:])
        _tabs = mo.ui.tabs(_views)
    mo.vstack([mo.md("## Show (xtc-katas show)"), _out, *([] if _tabs is None else [_tabs])])
    return


@app.cell
def _(kata, mo, tasks_where):
    explorable = bool(tasks_where(kata, "explored"))
    explore_button = mo.ui.run_button(label=f"Explore ({kata.id})", disabled=not explorable)
    return explorable, explore_button


@app.cell
def _(ROOT, RunBusy, RunLock, explorable, explore_button, kata, mo, subprocess, sys):
    _items = []
    if explore_button.value:
        _lock = RunLock(f"the notebook's explore on {kata.id}")
        try:
            _lock.acquire()
        except RunBusy as _busy:
            _items.append(mo.callout(mo.md(str(_busy)), kind="warn"))
        else:
            try:
                _done = subprocess.run(
                    [sys.executable, "-m", "xtc_katas", "explore", str(kata.number)],
                    cwd=ROOT,
                    capture_output=True,
                    text=True,
                )
            finally:
                _lock.release()
            _text = _done.stdout + _done.stderr
            _items.append(mo.plain_text(_text[-60000:]))
            for _line in _text.splitlines():
                if _line.startswith("plot: "):
                    _items.append(mo.image(_line[len("plot: ") :].strip()))
    _view = None
    if explorable:
        _view = mo.vstack([mo.md("## Explore (xtc-katas explore)"), explore_button, *_items])
    _view
    return


if __name__ == "__main__":
    app.run()
