"""xtc-katas: the harness behind the katas (manifest, loading, fixtures, checks, CLI)."""

from pathlib import Path

#: The repository's root: katas/, solutions/ and the manifest live under it.
ROOT = Path(__file__).resolve().parent.parent
