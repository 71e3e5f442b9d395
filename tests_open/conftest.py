"""The open red-team tests (tests_open/; README.md says which are open, which moved where):
`from tools import planted` finds the maintainers' tools from the repository's root, as
tests/conftest.py arranges."""

from __future__ import annotations

import sys

from xtc_katas import ROOT

if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
