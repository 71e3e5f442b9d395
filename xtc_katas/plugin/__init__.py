"""The pytest plugin behind every kata (the repository's conftest.py loads it), one
module per concern, as pytest's own plugins are split: options (and collection),
fixtures, reports (around each test's run and report), summary (the learner's record,
the failing tasks and the figures)."""

pytest_plugins = [
    "xtc_katas.plugin.summary",
    "xtc_katas.plugin.options",
    "xtc_katas.plugin.fixtures",
    "xtc_katas.plugin.reports",
]
