"""The Kafka group's fixtures: a real Kafka broker (KRaft, one node, loopback ports) for the whole
run, and a SparkSession with Spark's Kafka connector on ``spark.jars`` (Spark takes jars only when
its session starts: this group runs in a pytest process of its own, ``tests/kafka/run``)."""
from __future__ import annotations

import uuid
from typing import Iterator

import pyspark
import pytest
from pyspark.sql import SparkSession

from conftest import NO_DATAFRAME_DEBUGGING, SMALL_QUERIES
from support.jvm import TEST_DRIVER_MEMORY, TEST_JVM_OPTIONS
from support.kafka_broker import Broker, JarsUnavailable, connector_jars


@pytest.fixture(scope="session")
def connector() -> list[str]:
    """Spark's Kafka connector of the running PySpark version (fetched once into .cache/jars)."""
    try:
        return connector_jars(pyspark.__version__)
    except JarsUnavailable as exc:
        pytest.fail(f"{exc}. Run this group with tests/kafka/run: it runs it on the newest PySpark whose "
                    "connector Maven Central serves", pytrace=False)


@pytest.fixture(scope="session")
def broker() -> Iterator[Broker]:
    with Broker(partitions=4) as running:
        yield running


@pytest.fixture(scope="session")
def spark(connector: list[str]) -> Iterator[SparkSession]:
    session = (
        SparkSession.builder.master("local[2]")
        .appName("streamql-kafka-tests")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.memory", TEST_DRIVER_MEMORY)
        .config("spark.driver.extraJavaOptions", TEST_JVM_OPTIONS)
        .config("spark.jars", ",".join(connector))
        .config(*NO_DATAFRAME_DEBUGGING)
        .config(map=dict(SMALL_QUERIES))
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture
def topic() -> str:
    """A topic name of the test's own (the broker creates it with four partitions when written)."""
    return f"readings-{uuid.uuid4().hex[:8]}"
