"""The notebook mode: the kata loop in a marimo app (`xtc-katas notebook [N]`).

The stub file stays the one source of truth (stub_sync.py), the tests run through pytest
in a subprocess under the repository's run lock (runner.py), and the marimo app
(app.py) only shows and forwards: nothing of XTC is imported in the app's process.
"""
