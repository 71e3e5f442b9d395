"""Maintainer tools: calibration, flakecheck, selfcheck (CI's solved copy).

`repo_copy` makes the repository copies that selfcheck and the harness tests (tests/) run in.
"""
