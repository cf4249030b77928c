"""The Spark compiler: a query's nodes become DataFrame plans with the semantics of the reference
evaluator (``streamql.reference``), for batch runs (``streamql.binder``) and live ones
(``streamql.running``). One sub-package a concern; imports point only down this list:

- ``streaming``: the live step of a running query, window partials kept between steps, retention;
- ``windows``: windows and what they are compiled with — grouping, snapshot, hopping/tumbling,
  count, session and the Esper-style windows;
- ``operators``: the per-event flow and its registry (``compile_node``), joins, as-of joins,
  sub-queries shared by several queries, the release rule, ``explain``;
- ``ingress``: a bound DataFrame to accepted events — the binding, the arrival-order scan (CTI
  rows, CTI generation, DROP/ADJUST), edge matching, late records, the order of CTI imports;
- ``runtime``: the Spark session, the Python workers, job counting and phases;
- ``base``: internal column names, the payload schema in Spark types, expressions, aggregates.

docs/architecture.md draws the layers and the way data flows through them.
"""
from streamql.spark.compat import require_pyspark

require_pyspark("streamql's Spark compiler")
