"""The Kafka test group's topic and query: meter readings as JSON values in a topic of four
partitions, a hopping count per meter over them, and the code that writes, reads and binds the
topic. Run as a child process (``python kafka_topic.py BOOTSTRAP TOPIC SINK LATE_SINK CHECKPOINT
JARS``) it runs the query live on the topic, a few offsets per micro-batch, until it is killed.

The topic: eight meters ``m0``..``m7``, the key of each reading its meter, meter ``i`` in partition
``i % 4``. Partition ``p``'s readings are 10 us apart from its own origin; partition 3's origin is
a second behind the others' (a partition far behind: the input's CTI, the least of its partitions',
waits for it). Inside each partition every sixth reading is 35 us older than the one before it
(out of order): some of them are older than their partition's CTI and dropped (late records
naming their partition and offset), the others are accepted."""
from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Sequence

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

import streamql as sq

PARTITIONS = 4
METERS = 8
#: the origin of each partition's readings, in microseconds: partition 3 a second behind
ORIGINS = {0: 1_000_000, 1: 1_000_000, 2: 1_000_000, 3: 0}


@dataclass(frozen=True)
class Reading:
    meter: str
    consumption: float


@dataclass(frozen=True)
class MeterCount:
    meter: str
    count: int
    total: float


READINGS = sq.input("readings", Reading)
#: a CTI after every 4th accepted reading of a partition, 10 us behind; DROP; the flush at the end
SETTINGS = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=4, delay=timedelta(microseconds=10),
                                                           flush=True))
QUERY = (READINGS.group_by(lambda e: e.meter).hopping_window(timedelta(microseconds=40), timedelta(microseconds=20))
         .select(lambda w: MeterCount(w.key, w.count(), w.sum(lambda e: e.consumption))))
#: the JSON of a record's value
VALUE = T.StructType([T.StructField("ts", T.LongType()), T.StructField("meter", T.StringType()),
                      T.StructField("consumption", T.DoubleType())])


def records(first: int, count: int) -> list[tuple[int, str, str]]:
    """Readings ``first`` to ``first + count - 1`` of every partition, as (partition, key, value),
    each partition's in their order (the order they are written in)."""
    out: list[tuple[int, str, str]] = []
    for partition in range(PARTITIONS):
        meters = [f"m{i}" for i in range(METERS) if i % PARTITIONS == partition]
        for j in range(first, first + count):
            ts = ORIGINS[partition] + 10 * j - (35 if j % 6 == 5 else 0)
            meter = meters[j % len(meters)]
            value = {"ts": ts, "meter": meter, "consumption": float((7 * j + partition) % 13)}
            out.append((partition, meter, json.dumps(value)))
    return out


def produce(spark: SparkSession, bootstrap: str, topic: str, rows: Sequence[tuple[int, str, str]]) -> None:
    """Writes ``rows`` to ``topic`` with Spark's Kafka sink, each to its own partition, in order
    (one Spark task: its producer sends them in this order, and a partition keeps the order)."""
    frame = spark.createDataFrame(list(rows), "partition int, key string, value string").coalesce(1)
    (frame.write.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("topic", topic)
     .save())


def read(spark: SparkSession, bootstrap: str, topic: str) -> DataFrame:
    """The whole topic as it is now (``spark.read.format("kafka")``)."""
    return (spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic)
            .option("startingOffsets", "earliest").option("endingOffsets", "latest").load())


def read_stream(spark: SparkSession, bootstrap: str, topic: str, per_trigger: int) -> DataFrame:
    """The topic live from its start, at most ``per_trigger`` offsets per micro-batch."""
    return (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", topic).option("startingOffsets", "earliest")
            .option("maxOffsetsPerTrigger", per_trigger).load())


def parsed(records: DataFrame) -> DataFrame:
    """The readings of Kafka records: the value's JSON fields, with ``partition`` and ``offset``."""
    value = F.from_json(F.col("value").cast("string"), VALUE)
    return records.select(value.alias("v"), "partition", "offset").select("v.*", "partition", "offset")


def bind(spark: SparkSession, records: DataFrame) -> sq.Binder:
    """The topic as a partitioned input: each partition's own arrival order (its offsets), CTIs
    and violation check."""
    return sq.Binder(spark).bind(READINGS, parsed(records), start="ts", arrival="offset", partition="partition",
                                 partitions=list(range(PARTITIONS)), advance_time=SETTINGS)


def session(jars: Sequence[str], **config: str) -> SparkSession:
    """A local[2] session with Spark's Kafka connector on ``spark.jars``, set as the tests' sessions
    (its Python workers run this interpreter)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = (SparkSession.builder.master("local[2]").config("spark.sql.shuffle.partitions", "2")
               .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.session.timeZone", "UTC").config("spark.jars", ",".join(jars))
               .config("spark.python.sql.dataFrameDebugging.enabled", "false"))
    for key, value in config.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


def main(argv: Sequence[str]) -> None:
    from support.jvm import TEST_JVM_OPTIONS

    bootstrap, topic, sink, late_sink, checkpoint, jars = argv[:6]
    spark = session(jars.split(","), **{"spark.driver.extraJavaOptions": TEST_JVM_OPTIONS})
    running = bind(spark, read_stream(spark, bootstrap, topic, per_trigger=20)).start(
        QUERY, sink=sink, checkpoint=checkpoint, late_sink=late_sink)
    running.await_termination()


def released_rows(spark: SparkSession, sink: str) -> list[tuple[Any, ...]]:
    from streamql.running import MICRO_BATCH

    return sorted(tuple(r) for r in spark.read.parquet(sink).drop(MICRO_BATCH).collect())


if __name__ == "__main__":
    main(sys.argv[1:])
