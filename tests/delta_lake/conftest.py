"""The delta group's session: the tests' session (tests/conftest.py) with Delta Lake's jars, its SQL
extension and catalog. Spark takes jars only when the session starts, so the group runs in a
pytest process of its own (``tests/delta_lake/run.sh``: ``-m delta``), which fetches the jars into
``tests/delta_lake/.jars`` first (``tests/delta_lake/pom.xml``)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

import pytest

from conftest import NO_DATAFRAME_DEBUGGING, SMALL_QUERIES
from support.delta_lake import DELTA_SETTINGS, delta_jars
from support.jvm import TEST_DRIVER_MEMORY, TEST_JVM_OPTIONS

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


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
        .config("spark.driver.memory", TEST_DRIVER_MEMORY)
        .config("spark.driver.extraJavaOptions", TEST_JVM_OPTIONS)
        .config(*NO_DATAFRAME_DEBUGGING)
        .config(map=dict(SMALL_QUERIES))
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
