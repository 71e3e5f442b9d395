"""The notebook mode (`xtc-katas notebook [N]`): the kata loop in a marimo app (app.py)
that imports nothing of XTC; the stub file stays the one source of truth (stub_sync.py)
and the tests run through pytest in a subprocess, under the run lock (runner.py)."""
