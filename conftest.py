"""Every test in the repository runs with the kata harness (xtc_katas/plugin/)."""

pytest_plugins = ["xtc_katas.plugin"]
