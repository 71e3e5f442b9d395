"""How a kernel is built, run and timed, and the one speed rule.

Backends, work dirs, isolation, numerics, side-by-side timing, the machine, its peak.
"""
