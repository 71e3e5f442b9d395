"""Grading a class: `xtc-katas grade`, fair on every node, on Dask distributed.

- submissions: a folder, zip or git repository read into its stub files (nothing else
  of the learner's is run), and a roster;
- grading_job: one submission graded on one node, in a clean copy of the suite, one
  pytest process per kata (pytest_record: the run's record, one JSON line per event);
- cluster: the Dask cluster, its fairness rule (one single-threaded worker per node,
  Dask's own sampling turned down: quiet_node, a node's nanny preload) and the jobs in
  flight; who may connect to it: mutual TLS with the certificates of cluster_certs
  (`xtc-katas cluster certs`);
- result_formats, class_report: results.json (Exercism, Gradescope), class.csv and
  class.html;
- grade_command: the command; repo_copy: the clean copy of the suite a node grades in.

The benchmark, planted submissions and class.html in chromium are maintainers' (tools/).
"""
