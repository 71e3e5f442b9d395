"""Judging a learner's code: schedule and loop-nest shape, searches, the speed race."""
