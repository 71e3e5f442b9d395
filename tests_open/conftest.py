"""The maintainers' tools (tools/: not installed, so not on sys.path) that these tests
import, as `tools`, as tests/conftest.py does."""

import sys

from xtc_katas import ROOT

if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
