"""Every test in the repository runs with the kata harness (xtc_katas/plugin.py)."""

pytest_plugins = ["xtc_katas.plugin"]
