"""A bound DataFrame becomes the accepted events of an input, with its CTIs.

- ``binding``: what ``Binder.bind`` records, the checks that need no job, and ``prepare`` (rows in
  arrival order, times in microseconds, bad-row reasons);
- ``arrival_scan``: the arrival-order rule (CTI rows, CTI generation, DROP/ADJUST) as a parallel
  scan over numpy arrays, run in Spark's Python workers;
- ``scan``: that scan on Spark and its decisions applied to the events (``run_ingress``);
- ``imports``: the order in which inputs are scanned when some import others' CTIs;
- ``edge_matching``: end edges matched to their start edges;
- ``late``: the records of the rows dropped, moved or found bad;
- ``replay``: bound rows back to reference-evaluator items (timelines of small Spark runs).
"""
