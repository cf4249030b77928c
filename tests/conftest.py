"""Shared fixtures: one SparkSession for the whole test run (JVM start-up costs ~15 s)."""
from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any, Iterator

import pytest

from support import py4j_names
from support.jvm import TEST_DRIVER_MEMORY, TEST_JVM_OPTIONS

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
# Python workers unpickle the user aggregates defined in test modules by reference: they import
# those modules, and with them the shared ``support`` package
_TESTS = os.path.dirname(os.path.abspath(__file__))
os.environ["PYTHONPATH"] = os.pathsep.join(
    p for p in (_TESTS, os.path.dirname(_TESTS), os.environ.get("PYTHONPATH")) if p)


#: as ``sq.local_session``: no call-site capture per PySpark call (a query builds hundreds of Columns;
#: each capture is four more round trips to the JVM)
NO_DATAFRAME_DEBUGGING = ("spark.python.sql.dataFrameDebugging.enabled", "false")
#: the test session plans thousands of small queries over a few rows each, once each: it runs them
#: without adaptive execution (a job per shuffle stage, re-planned after each), with interpreted
#: expressions (no Java source generated and compiled per query) — a sixth less time for the Spark
#: tests here — and without whole-stage code generation (the same, per stage: another 6-15 % less
#: for the hand-worked cases, measured over two files, each way twice). Neither changes a result (a live query's steps run without adaptive execution in any
#: session: ``streamql/running.py``); the subprocess groups (local-cluster, the killed and restarted
#: queries, the examples, ``sq.local_session``'s workers) run with Spark's defaults.
SMALL_QUERIES = (("spark.sql.adaptive.enabled", "false"), ("spark.sql.codegen.factoryMode", "NO_CODEGEN"),
                 ("spark.sql.codegen.wholeStage", "false"))


#: ``STREAMQL_SESSION=connect``: the tests' session is a Spark Connect one (a local server started
#: in the test process, ``SparkSession.builder.remote("local[2]")``): the Spark Connect group
#: (tests/connect/test_on_spark_connect.py) runs property tests so, in a process of its own
CONNECT = os.environ.get("STREAMQL_SESSION") == "connect"
#: PySpark 3.5 bundles no Spark Connect server: ``.ci/matrix`` fetches its jar with Maven and names
#: it in ``STREAMQL_SPARK_CONNECT_JAR`` (Spark's own fetch, ``spark.jars.packages``, otherwise)
CONNECT_JARS = {"spark.jars": os.environ["STREAMQL_SPARK_CONNECT_JAR"]} if os.environ.get("STREAMQL_SPARK_CONNECT_JAR") else {}


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    from pyspark.sql import SparkSession

    if CONNECT:
        from streamql.spark.compat import connect_server_settings

        remote = (
            SparkSession.builder.remote("local[2]")
            .config(map=dict[str, Any](connect_server_settings(CONNECT_JARS)))  # PySpark 3.5: the server's package
            .config(map=dict[str, Any](CONNECT_JARS))
            .config("spark.sql.shuffle.partitions", "2")
            .config("spark.ui.enabled", "false")
            .config("spark.sql.session.timeZone", "UTC")
            .config("spark.driver.memory", TEST_DRIVER_MEMORY)
            .config("spark.driver.extraJavaOptions", TEST_JVM_OPTIONS)
            .config(map=dict(SMALL_QUERIES))
            .getOrCreate()
        )
        yield remote  # a Spark Connect session: the same API the tests use
        remote.stop()
        return
    py4j_names.install()  # fewer round trips to the JVM (tests/support/py4j_names.py)
    session = (
        SparkSession.builder.master("local[2]")
        .appName("streamql-tests")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.memory", TEST_DRIVER_MEMORY)
        .config("spark.driver.extraJavaOptions", TEST_JVM_OPTIONS)
        .config(*NO_DATAFRAME_DEBUGGING)
        .config(map=dict(SMALL_QUERIES))
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Marks ``compat`` the tests of the compatibility group's sample (tests/compat/sample.py)."""
    from compat.sample import CLASSIC
    from compat.sample import CONNECT as CONNECT_SAMPLE

    sample = CONNECT_SAMPLE if CONNECT else CLASSIC
    for item in items:
        path = item.nodeid.split("::")[0]
        if any(item.nodeid == n or item.nodeid.startswith(n + "[") or path == n for n in sample):
            item.add_marker(pytest.mark.compat)
