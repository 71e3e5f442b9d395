"""What a kata is and where the learner stands.

The manifest, the problems, the module under test, stubs, friendly failures, progress.
Everything else in the harness builds on this package; it imports no other.
"""
