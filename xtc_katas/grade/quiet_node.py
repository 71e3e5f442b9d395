"""Dask's own sampling turned down on a grading node (cluster.QUIET), preloaded by its nanny:

    dask worker tls://HEAD:8786 --nworkers 1 --nthreads 1 --resources node=1 \
        --preload-nanny xtc_katas.grade.quiet_node --tls-ca-file ... (cluster.TLS_FLAGS)

A nanny imports its preloads before it reads the configuration it hands to the worker it
starts, so the settings made here, at import, are the worker's too (and its restarts').
The grader refuses a worker whose profiler is on: it samples a running grade's thread
every 10 ms, beside the races.
"""

import dask

from xtc_katas.grade.cluster import QUIET

dask.config.set(QUIET)
