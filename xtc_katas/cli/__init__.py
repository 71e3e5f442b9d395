"""The learner's command, `xtc-katas`: status, run, watch, hint, reset, show, explore, report."""
