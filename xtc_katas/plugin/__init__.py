"""The pytest plugin behind every kata, one module per concern, as pytest's own plugins
are split:

- options: --solutions (test solutions/ instead of katas/), --backend mlir|tvm (one
  backend for a faster loop), --check-stubs (CI: every kata test must FAIL on the
  untouched stubs, with the stub's NotImplementedError); collection binds each test to
  its kata and tasks;
- fixtures: kata_entry, learner_module (the module under test, behind its process
  boundary), task, backend's workdir, peak, record_perf;
- reports: around each test's run and report (the stub first, friendly failures, the
  stub check's inversion);
- summary: the learner's progress record and the performance summary.

The repository's conftest.py loads this package; it loads the four.
"""

pytest_plugins = [
    "xtc_katas.plugin.summary",
    "xtc_katas.plugin.options",
    "xtc_katas.plugin.fixtures",
    "xtc_katas.plugin.reports",
]
