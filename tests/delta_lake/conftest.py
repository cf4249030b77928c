"""The delta group's session: the tests' session (tests/conftest.py) with Delta Lake's jars, its SQL
extension and catalog. Spark takes jars only when the session starts, so the group runs in a
pytest process of its own (``tests/delta_lake/run.sh``: ``-m delta``), which fetches the jars into
``tests/delta_lake/.jars`` first (``tests/delta_lake/pom.xml``)."""
from __future__ import annotations

import glob
import os
from typing import TYPE_CHECKING, Iterator

import pytest

from conftest import NO_DATAFRAME_DEBUGGING, SMALL_QUERIES, TEST_JVM_OPTIONS

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

#: where ``tests/delta_lake/run.sh`` copies the jars (STREAMQL_DELTA_JARS: another directory)
JARS = os.environ.get("STREAMQL_DELTA_JARS", os.path.join(os.path.dirname(os.path.abspath(__file__)), ".jars"))

#: the settings that make a session read and write Delta tables (docs/kafka-and-delta.md)
DELTA_SETTINGS: dict[str, bool | float | int | str | None] = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
    # the tables here have a few files: their snapshots in 2 partitions, not Delta's 50
    "spark.databricks.delta.snapshotPartitions": "2",
}


def delta_jars() -> str:
    """The jars, comma-separated (``spark.jars``); a clear failure when they were not fetched."""
    jars = sorted(glob.glob(os.path.join(JARS, "*.jar")))
    if not any(os.path.basename(j).startswith("delta-spark_") for j in jars):
        raise RuntimeError(f"no Delta Lake jars in {JARS}: run the delta group with tests/delta_lake/run.sh, which "
                           "fetches them (mvn -f tests/delta_lake/pom.xml dependency:copy-dependencies)")
    return ",".join(jars)


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]")
        .appName("streamql-delta-tests")
        .config("spark.jars", delta_jars())
        .config(map=DELTA_SETTINGS)
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.memory", "2g")
        .config("spark.driver.extraJavaOptions", TEST_JVM_OPTIONS)
        .config(*NO_DATAFRAME_DEBUGGING)
        .config(map=dict(SMALL_QUERIES))
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
