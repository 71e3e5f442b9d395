"""The kata loop as a marimo app: lesson, hints, tasks, the stub in an editor, run, charts.

Started by `xtc-katas notebook [N]` (server.py). The app imports nothing of XTC: pytest
(runner.py) and the xtc-katas command run in subprocesses. The stub file on disk stays
the one source of truth (stub_sync.py).

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

    import marimo as mo

    from xtc_katas import ROOT
    from xtc_katas.checks.kinds import tasks_where
    from xtc_katas.kata import progress
    from xtc_katas.kata.manifest import find
    from xtc_katas.kata.run_lock import RunBusy, run_lock
    from xtc_katas.measure import machine
    from xtc_katas.notebook import stub_sync, views
    from xtc_katas.notebook.runner import KataRun

    args = mo.cli_args()
    chosen = args.get("kata") or os.environ.get("XTC_KATAS_NOTEBOOK_KATA")
    kata = find(str(chosen)) if chosen else progress.current_kata()
    # `-- --autorun [--quick] [--backend B] [--task F]`: KataRun's options for the run at
    # start. Flags without a value: marimo's parser gives them "" (present) or nothing.
    autorun = "autorun" in args and {
        "quick": "quick" in args,
        "backends": (str(args["backend"]),) if args.get("backend") else (),
        "task": str(args.get("task") or ""),
    }
    machine_line = machine.describe()
    #: The run in progress (or the last one) and its rendered result, kept across cells.
    current = {"run": None, "shown": None, "shown_html": None, "save": 0, "run_clicks": 0}

    def cli(*argv):
        """`xtc-katas *argv` in a subprocess: its output."""
        command = [sys.executable, "-m", "xtc_katas", *argv]
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
        return done.stdout + done.stderr

    return (
        KataRun,
        RunBusy,
        autorun,
        cli,
        current,
        kata,
        machine_line,
        mo,
        progress,
        run_lock,
        stub_sync,
        tasks_where,
        views,
    )


@app.cell
def _(kata, mo):
    _lesson = mo.md((kata.folder() / "README.md").read_text())
    _title = f"The lesson (katas/{kata.id}/README.md)"
    mo.vstack([mo.md(f"# {kata.id}: {kata.title}"), mo.accordion({_title: _lesson})])
    return


@app.cell
def _(current, kata, mo, stub_sync, tasks_where):
    get_loaded, set_loaded = mo.state(stub_sync.load(kata))
    get_note, set_note = mo.state(None)
    get_done, set_done = mo.state(None)
    _functions = [t.function for t in kata.tasks]
    hint_task = mo.ui.dropdown(_functions, value=_functions[0], label="hint for")
    hint_button = mo.ui.run_button(label="next hint")
    # Counting buttons, not run_buttons: a click that lands while the kernel is busy
    # (a select changed, a save re-ran the editor) still counts, once.
    save_button = mo.ui.button(value=0, on_click=lambda n: n + 1, label="Save", kind="success")

    def _reload(_):
        set_loaded(stub_sync.load(kata))
        set_note(("info", f"reloaded {kata.stub_path().name} from disk"))

    reload_button = mo.ui.button(label="Reload from disk", kind="warn", on_click=_reload)
    run_button = mo.ui.button(value=0, on_click=lambda n: n + 1, label="Run tests", kind="success")
    quick = mo.ui.switch(label="quick (no speed races)")
    backend = mo.ui.dropdown(["both", "mlir", "tvm"], value="both", label="backend")
    only_task = mo.ui.dropdown(["all tasks", *_functions], value="all tasks", label="run")
    tick = mo.ui.refresh(options=["1s"], default_interval="1s")

    def _cancel(_):
        if current["run"] is not None:
            current["run"].cancel()

    cancel_button = mo.ui.button(label="Cancel run", kind="danger", on_click=_cancel)
    _shown = [t.function for t in tasks_where(kata, "probe")]
    show_function = mo.ui.dropdown(_shown, value=_shown[0] if _shown else None, label="task")
    show_backend = mo.ui.dropdown(["mlir", "tvm"], value="mlir", label="backend")
    show_button = mo.ui.run_button(label="Show loop nest, IR, assembly")
    explore_button = None
    if tasks_where(kata, "explored"):
        explore_button = mo.ui.run_button(label=f"Explore ({kata.id})")
    return (
        backend,
        cancel_button,
        explore_button,
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
        show_backend,
        show_button,
        show_function,
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
def _(get_loaded, kata, mo):
    editor = mo.ui.code_editor(
        value=get_loaded().text,
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
def _(get_loaded, kata, mo, reload_button, stub_sync, tick):
    tick
    _text = (
        f"**{kata.stub_path().name} changed on disk** (another editor, `xtc-katas reset`, "
        "git). Saving is refused until you reload it: reloading replaces the editor's text "
        "with the file's."
    )
    _banner = None
    if stub_sync.changed_on_disk(get_loaded()):
        _banner = mo.callout(mo.vstack([mo.md(_text), reload_button]), kind="warn")
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
    backend,
    current,
    get_loaded,
    kata,
    only_task,
    quick,
    run_button,
    set_note,
    stub_sync,
):
    _clicked = run_button.value > current["run_clicks"]
    current["run_clicks"] = run_button.value
    _options = {
        "quick": quick.value,
        "backends": () if backend.value == "both" else (backend.value,),
        "task": "" if only_task.value == "all tasks" else only_task.value,
    }
    if autorun and current["run"] is None:
        _clicked, _options = True, autorun
    if _clicked and current["run"] is not None and current["run"].running:
        set_note(("warn", f"{kata.id}: a run is in progress: cancel it or wait for it"))
    elif _clicked:
        try:
            current["run"] = KataRun(kata, **_options).start()
        except RunBusy as _busy:
            set_note(("warn", f"{kata.id}: not run: {_busy}"))
        else:
            if stub_sync.changed_on_disk(get_loaded()):
                set_note(("warn", "the run tests the file on disk, changed since loaded"))
            if autorun:
                current["run"].wait()
    launched = current["run"]
    return (launched,)


@app.cell
def _(backend, cancel_button, mo, only_task, quick, run_button):
    _controls = [run_button, only_task, quick, backend, cancel_button]
    mo.vstack([mo.md("## Run"), mo.hstack(_controls, justify="start")])
    return


@app.cell
def _(mo, tick):
    # alone: a cell naming `tick` reruns at every tick, and would redraw the Run button
    mo.hstack([mo.md("<small>live updates</small>"), tick], justify="start")
    return


@app.cell
def _(current, get_done, launched, mo, set_done, tick, views):
    tick, launched
    _run = current["run"]
    _view = None
    if _run is not None and _run.result is None:
        _view = mo.Html(views.progress_text(_run))
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
            _alt = (
                f"{kata.id}: your speedups against the reference's and the bar, on {machine_line}"
            )
            _parts = [mo.Html(views.verdicts(_run.result, kata))]
            if _png is not None:
                _parts.append(mo.image(_png, alt=_alt))
            current["shown"], current["shown_html"] = _run, mo.vstack(_parts)
        _view = current["shown_html"]
    _view
    return


@app.cell
def _(cli, kata, mo, show_backend, show_button, show_function):
    _items = [mo.md("## Show (xtc-katas show)")]
    if show_function.value is None:
        _items.append(mo.md(f"{kata.id} has no schedule to show (no task of it builds one)."))
    else:
        _items.append(mo.hstack([show_function, show_backend, show_button], justify="start"))
    if show_button.value and show_function.value:
        _args = ["show", str(kata.number), show_function.value, f"--backend={show_backend.value}"]
        _flags = {"loop nest": "--nest", "IR": "--ir", "assembly": "--asm"}
        _views = {k: mo.plain_text(cli(*_args, f)[-60000:]) for k, f in _flags.items()}
        _items.append(mo.ui.tabs(_views))
    mo.vstack(_items)
    return


@app.cell
def _(RunBusy, cli, explore_button, kata, mo, run_lock):
    _items = [mo.md("## Explore (xtc-katas explore)"), explore_button]
    if explore_button is not None and explore_button.value:
        try:
            with run_lock(f"the notebook's explore on {kata.id}"):
                _text = cli("explore", str(kata.number))
        except RunBusy as _busy:
            _items.append(mo.callout(mo.md(str(_busy)), kind="warn"))
        else:
            _items.append(mo.plain_text(_text[-60000:]))
            for _line in _text.splitlines():
                if _line.startswith("plot: "):
                    _items.append(mo.image(_line[len("plot: ") :].strip()))
    mo.vstack(_items) if explore_button is not None else None
    return


if __name__ == "__main__":
    app.run()
