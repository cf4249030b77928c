"""The Kafka row of the benchmark (``benchmarks/run.py --only kafka``; this file is benchmarks/kafka_stream.py): the twin of the
file-directory row's hopping counts (benchmarks/streaming.py) over a topic of four partitions.

A single-node Kafka broker (KRaft) on a loopback port is started for the row, from Kafka's jars
on Maven Central (tests/support/kafka_broker.py, cached in ``.cache/jars``), unless ``--bootstrap``
names one. The topic: ``--events`` readings (1 M), JSON values ``{"ts", "meter", "consumption"}``
10 ms apart over 1,000 meters, each keyed by its meter, meter ``i`` in partition ``i % 4``, each
partition in time order (as benchmarks/run.py's ``meters``). Both runs read it live from its start,
``--kafka-per-trigger`` offsets (100 k) per micro-batch, parse the JSON the same way and write
parquet:

- **streamql**: the topic bound as a partitioned input (``partition="partition"``,
  ``arrival="offset"``, partitions 0-3; a CTI every 1,000 readings of a partition, 1 ms behind),
  hopping 60 s / 10 s counts per meter;
- **Spark's own** streaming aggregation, ``groupBy(window(ts, "60 seconds", "10 seconds"),
  meter).count()`` with a 1 ms watermark in append mode — the query a user would write instead.

Both are timed from the start until everything is processed (no flush: the last windows stay
unreleased in both); the outputs are compared. Spark's watermark is one for the whole topic (the
greatest time seen, less the delay), streamql's CTI the least of its partitions': where the
partitions' micro-batch slices end at different times, Spark can drop readings of the partition
that is behind as late and release windows earlier; the comparison line says how many rows differ.
"""
from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

import streamql as sq
import streaming  # noqa: E402 - benchmarks/streaming.py, beside this file

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests"))
from support.kafka_broker import Broker, connector_jars  # noqa: E402

PARTITIONS = 4
VALUE = T.StructType([T.StructField("ts", T.LongType()), T.StructField("meter", T.StringType()),
                      T.StructField("consumption", T.DoubleType())])


def jars() -> list[str]:
    """Spark's Kafka connector of the running PySpark, for the benchmark session's ``spark.jars``."""
    import pyspark

    return connector_jars(pyspark.__version__)


def produce(spark: SparkSession, bootstrap: str, topic: str, events: int) -> float:
    """Writes the topic (one Spark task per Kafka partition, in time order); returns the seconds."""
    ids = spark.range(0, events, 1, 8)
    start = F.col("id") * 10_000 - (F.col("id") % 7) * 100
    start = F.when(F.col("id") % 10 == 9, start - 10_000).otherwise(start)
    meter = F.concat(F.lit("m"), (F.col("id") % 1000).cast("string"))
    records = ids.select(
        F.col("id"), (F.col("id") % 1000 % PARTITIONS).cast("int").alias("partition"), meter.alias("key"),
        F.to_json(F.struct(start.alias("ts"), meter.alias("meter"),
                           ((F.col("id") % 400) * 0.25).alias("consumption"))).alias("value"))
    began = time.perf_counter()
    (records.repartition(PARTITIONS, "partition").sortWithinPartitions("id").drop("id")
     .write.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("topic", topic).save())
    return time.perf_counter() - began


def stream(spark: SparkSession, bootstrap: str, topic: str, per_trigger: int) -> DataFrame:
    records = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
               .option("subscribe", topic).option("startingOffsets", "earliest")
               .option("maxOffsetsPerTrigger", per_trigger).load())
    value = F.from_json(F.col("value").cast("string"), VALUE)
    return records.select(value.alias("v"), "partition", "offset").select("v.*", "partition", "offset")


def ours(spark: SparkSession, source: DataFrame, work: str) -> streaming.Run:
    binder = sq.Binder(spark).bind(streaming.READINGS, source, start="ts", arrival="offset", partition="partition",
                                   partitions=list(range(PARTITIONS)), advance_time=streaming.SETTINGS)
    sink = os.path.join(work, "out-kafka")
    running = binder.start(streaming.hopping_counts(), sink=sink, checkpoint=os.path.join(work, "ck-kafka"),
                           feed=False)
    began = time.perf_counter()
    running.process_all_available()
    seconds = time.perf_counter() - began
    running.stop(flush=False)
    return streaming.Run(seconds, list(running.progress), sink)


def native(source: DataFrame, work: str) -> tuple[float, str, Any]:
    out = os.path.join(work, "out-kafka-native")
    query = (streaming.native_hopping_counts(source).writeStream.format("parquet").outputMode("append")
             .option("path", out).option("checkpointLocation", os.path.join(work, "ck-kafka-native")).start())
    began = time.perf_counter()
    query.processAllAvailable()
    seconds = time.perf_counter() - began
    batches = len(query.recentProgress)
    query.stop()
    return seconds, out, batches


def floor(source: DataFrame, work: str) -> float:
    query = (source.writeStream.format("parquet").option("path", os.path.join(work, "copy-kafka"))
             .option("checkpointLocation", os.path.join(work, "ck-kafka-copy")).start())
    began = time.perf_counter()
    query.processAllAvailable()
    seconds = time.perf_counter() - began
    query.stop()
    return seconds


def run(spark: SparkSession, events: int, per_trigger: int, bootstrap: str | None) -> list[str]:
    """Runs the row (a broker of its own unless ``bootstrap``) and returns its lines."""
    work = tempfile.mkdtemp(prefix="streamql-kafka-bench-")
    broker = None if bootstrap else Broker(partitions=PARTITIONS).start()
    try:
        address = bootstrap or (broker.bootstrap if broker else "")
        topic = f"bench-{events}-{int(time.time())}"
        produced = produce(spark, address, topic, events)
        lines = [f"kafka: a topic of {PARTITIONS} partitions, {events:,} JSON readings over 1,000 meters (written in "
                 f"{produced:.1f} s), at most {per_trigger / 1e3:g} k offsets per micro-batch"]
        hopping = ours(spark, stream(spark, address, topic, per_trigger), work)
        native_s, native_out, native_batches = native(stream(spark, address, topic, per_trigger), work)
        floor_s = floor(stream(spark, address, topic, per_trigger), work)
        lines += ["hopping 60 s / 10 s counts per meter, live over the topic",
                  streaming._line("streamql (partitioned input)", events, hopping,
                                  f", {len(hopping.progress)} micro-batches"),
                  f"  Spark's own streaming aggregation (1 ms watermark): {events / native_s:,.0f} events/s "
                  f"({native_s:.1f} s, {native_batches} micro-batches); ratio streamql / Spark "
                  f"{hopping.seconds / native_s:.2f}; {streaming.same_windows(spark, hopping.sink, native_out)}",
                  f"  floor (read + parse + write unchanged): {events / floor_s:,.0f} events/s ({floor_s:.1f} s)"]
        return lines
    finally:
        if broker is not None:
            broker.stop()
        shutil.rmtree(work, ignore_errors=True)
