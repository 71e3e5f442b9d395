"""Maintainers' tools, run from the repository's root (`python -m tools.NAME`) by CI, the
harness tests and whoever re-checks the speed rule on a new machine; the wheel does not
ship them (pyproject.toml installs xtc_katas only), and xtc_katas never imports them
(import-linter's contract).

- selfcheck: CI's solved copy; calibration and flakecheck: the speed rule's figures and
  margins on this machine; lesson_blocks: the lessons' generated blocks;
- copy_runs: python, pytest and a learner's edit in a copy of the repository;
- bench: grades per hour and Dask's overhead; planted: submissions made from the
  solutions, for the benchmark and the tests;
- browser: Debian's chromium for the browser tests; page_view and screenshot: class.html
  and the notebook as drawn (the docs' screenshots); arm64_emulated.sh: the suite as aarch64.
"""
