"""streamql over Spark Connect (docs/spark-connect.md): the Spark property tests of stateless
operators, windows and late records (the joins' property tests build their plans with the same
DataFrame calls and run on classic sessions only: the deep tier's time), running queries (a file-directory stream, and one
stopped and started again: the tests marked ``connect``), and the Connect-only tests
(``test_connect_session.py``, with a running query over static inputs and a restart), run in a process of their own whose test session is a Spark Connect
one (``STREAMQL_SESSION=connect``: ``SparkSession.builder.remote("local[2]")``, a local Spark
Connect server started in that process; tests/conftest.py). A process holds one SparkContext —
the session fixture's here — so the group runs in a subprocess, as the local-cluster group does.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: the Spark property tests run again over Spark Connect, at the default tier's counts
PROPERTY_TESTS = (
    "tests/spark/test_against_reference.py",           # stateless operators, every input shape
    "tests/spark/test_windows_against_reference.py",   # every window kind, grouped and not
    "tests/spark/test_late_on_spark.py",               # late records, Binder.late and write(late_path=)
    # plans grow linearly on Connect sessions too
    "tests/spark/test_plan_growth.py::test_forty_chained_stateless_operators_of_every_kind_grow_the_plan_linearly",
    "tests/spark/test_plan_growth.py::"
    "test_shifts_and_alter_lifetimes_forty_times_before_a_grouped_window_grow_the_plan_linearly",
    "tests/spark/test_plan_growth.py::test_a_query_unioned_with_itself_shifted_at_most_doubles_the_plan",
    "tests/connect/test_connect_session.py",           # what only a Connect session shows
    # live (foreachBatch on the server), with a restart
    "tests/streaming/test_running_queries.py::test_a_file_directory_query_releases_what_the_batch_run_releases",
    "tests/streaming/test_running_queries.py::test_a_query_stopped_and_started_again_continues_where_it_stopped",
    # a running query of forty operators over another's output: plans deeper than a checkpoint
    # command of the Connect client takes
    "tests/streaming/test_running_queries.py::"
    "test_a_running_query_of_forty_operators_over_another_releases_what_the_composed_query_releases",
)


@pytest.mark.connect
@pytest.mark.slow
def test_property_tests_pass_over_spark_connect() -> None:
    env = {**os.environ, "STREAMQL_SESSION": "connect", "PYSPARK_PYTHON": sys.executable,
           "STREAMQL_DEPTH": "default"}
    # the hand-worked late cases run on a classic session only (they check the late rule, which the
    # property tests of late records check over Connect too): the group stays within the deep tier's time
    command = [sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider", "-m", "not slow or connect",
               "-k", "not test_hand_worked_late_case_on_spark",
               "--durations=0", "-W", "ignore::UserWarning", *PROPERTY_TESTS]
    try:
        done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"the Spark Connect group did not finish in {exc.timeout} s:\n{exc.stdout!r}")
    report = f"stdout (end):\n{done.stdout[-12000:]}\nstderr (end):\n{done.stderr[-4000:]}"
    assert done.returncode == 0, report
    assert " passed" in done.stdout and "failed" not in done.stdout, report
