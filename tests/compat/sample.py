"""The compatibility group's sample (docs/compatibility.md): the tests that ``.ci/matrix`` runs on
every supported PySpark minor, marked ``compat`` by tests/conftest.py. Spark = reference on every
operator family, late records, a live query with a restart, and — in a process whose session is a
Spark Connect one — the Spark Connect tests, where that version's Connect client has what they use.

``python tests/compat/sample.py classic`` (or ``connect``) prints the files to hand to pytest."""
from __future__ import annotations

import sys

#: run on a classic session: node ids, or files (every test in them)
CLASSIC = (
    "tests/compat/test_installed.py",                       # installed beside the user's pyspark
    "tests/spark/test_seeds_on_spark.py",                   # event shapes, CTIs, lifetimes (hand-worked)
    "tests/spark/test_multi_stream_seeds_on_spark.py",      # joins, unions, multi-stream CTIs (hand-worked)
    "tests/spark/test_expressions_on_spark.py",             # expressions: arithmetic, casts, strings, nulls
    "tests/spark/test_against_reference.py",                # stateless operators (property)
    "tests/spark/test_windows_against_reference.py",        # every window kind, grouped and not (property)
    "tests/spark/test_session_windows_on_spark.py",         # session windows
    "tests/spark/test_top_k_against_reference.py",          # top-k
    "tests/spark/test_esper_against_reference.py",          # Esper-style windows
    "tests/spark/test_patterns_against_reference.py",       # patterns
    "tests/spark/test_as_of_against_reference.py",          # as-of joins
    "tests/spark/test_edges_on_spark.py",                   # edge events
    "tests/spark/test_late_on_spark.py",                    # late records
    # a live query (Structured Streaming, foreachBatch), and one stopped and started again
    "tests/streaming/test_running_queries.py::test_a_file_directory_query_releases_what_the_batch_run_releases",
    "tests/streaming/test_running_queries.py::test_a_query_stopped_and_started_again_continues_where_it_stopped",
)

#: run on a Spark Connect session (``STREAMQL_SESSION=connect``)
CONNECT = (
    "tests/compat/test_installed.py",
    "tests/connect/test_connect_session.py",
)


def files(node_ids: tuple[str, ...]) -> list[str]:
    return list(dict.fromkeys(n.split("::")[0] for n in node_ids))


if __name__ == "__main__":
    print(" ".join(files(CONNECT if sys.argv[1:] == ["connect"] else CLASSIC)))
