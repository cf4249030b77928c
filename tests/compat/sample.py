"""The compatibility group's sample (docs/compatibility.md): the tests that ``.ci/matrix`` runs on
every supported PySpark minor, marked ``compat`` by tests/conftest.py. Spark = reference on every
operator family, late records, a live query with a restart, and — in a process whose session is a
Spark Connect one — the Spark Connect tests, where that version's Connect client has what they use.

``python tests/compat/sample.py classic`` (or ``connect``) prints the files to hand to pytest."""
from __future__ import annotations

import sys

#: run on a classic session: node ids, or files (every test in them)
CLASSIC = (
    "tests/compat/test_installed.py",                   # installed beside the user's pyspark
    "tests/compat/test_version_differences.py",         # what differs between versions
    # event shapes, CTIs, DROP/ADJUST, lifetimes (StreamInsight's seeds, hand-worked)
    "tests/spark/test_seeds_on_spark.py::test_drop_policy",
    "tests/spark/test_seeds_on_spark.py::test_adjust_policy",
    "tests/spark/test_seeds_on_spark.py::test_shift_and_alter_lifetime_move_the_ctis",
    "tests/spark/test_multi_stream_seeds_on_spark.py",  # joins, unions, CTIs over several inputs
    "tests/spark/test_expressions_on_spark.py::test_arithmetic",
    "tests/spark/test_expressions_on_spark.py::test_datetime_and_timedelta_arithmetic",
    "tests/spark/test_expressions_on_spark.py::test_string_operations",
    "tests/spark/test_against_reference.py",            # stateless operators (property)
    "tests/spark/test_windows_against_reference.py",    # every window kind, grouped and not (property)
    "tests/spark/test_session_windows_on_spark.py::test_hand_worked_sessions_on_spark",
    "tests/spark/test_top_k_against_reference.py::test_hand_worked_cases_on_spark",
    "tests/spark/test_esper_against_reference.py::test_withdrawal_length_window_insert_and_remove_streams",
    "tests/spark/test_esper_against_reference.py::test_withdrawal_time_batch_sum",
    "tests/spark/test_patterns_against_reference.py::test_patterns_on_spark_equal_reference",
    "tests/spark/test_as_of_against_reference.py::test_as_of_join_on_spark_equals_reference",
    "tests/spark/test_edges_on_spark.py::test_seed_000_signal_edge_output_is_insert_and_remove_streams",
    "tests/spark/test_edges_on_spark.py::test_seed_001_late_end_edge_adjust_moves_it_to_the_cti",
    # late records
    "tests/spark/test_late_on_spark.py::test_a_late_point_is_recorded_with_the_cti_it_violated",
    "tests/spark/test_late_on_spark.py::test_late_records_on_spark_equal_the_reference",
    # a live query (Structured Streaming over a file directory, foreachBatch) stopped and started
    # again, releasing what the batch run releases (the first-run-only live test is the default
    # tier's: each version's cell is 20 s shorter without it, and .ci/run's lanes share the cores)
    "tests/streaming/test_running_queries.py::test_a_query_stopped_and_started_again_continues_where_it_stopped",
)

#: run on a Spark Connect session (``STREAMQL_SESSION=connect``): a query, the workers' probe, a
#: running query over static inputs stopped and started again, a late record
CONNECT = (
    "tests/compat/test_installed.py",
    "tests/compat/test_version_differences.py",
    "tests/connect/test_connect_session.py",
)


def files(node_ids: tuple[str, ...]) -> list[str]:
    return list(dict.fromkeys(n.split("::")[0] for n in node_ids))


if __name__ == "__main__":
    print(" ".join(files(CONNECT if sys.argv[1:] == ["connect"] else CLASSIC)))
