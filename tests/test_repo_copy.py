"""Repository copies hold the learner's files and nothing a concurrent compile leaves."""

from pathlib import Path

from xtc_katas import ROOT
from xtc_katas.grade.repo_copy import IGNORED


def test_a_harness_test_compiles_outside_the_repository():
    # TVM's ./tmpXXXX/ appear where a test compiles; a copy taken by another worker at
    # that moment listed one that had vanished (CI, stop 28: shutil.Error, No such file).
    assert not Path.cwd().resolve().is_relative_to(ROOT.resolve())


def test_a_copy_leaves_out_tvms_scratch_directories_and_keeps_the_katas():
    names = ["tmpz45plkqs", "katas", "solutions", "xtc_katas", "conftest.py", ".venv"]
    assert IGNORED(str(ROOT), names) == {"tmpz45plkqs", ".venv"}
