"""A live query over a Kafka topic of four partitions, and what a quiet partition does to it.

    .venv/bin/python examples/kafka_live.py --bootstrap HOST:PORT [--topic NAME] [--jars A.jar,B.jar]

It writes meter readings (JSON values, each keyed by its meter, eight meters over the topic's four
partitions) to a new topic on the broker at ``--bootstrap``, then runs hopping counts per meter
live over the topic (``spark.readStream.format("kafka")``, at most 16 offsets per micro-batch),
bound as a partitioned input: each partition has its own arrival order (its offsets) and CTIs, and
the input's CTI is the least of its partitions'. In three rounds:

1. readings in partitions 0, 1 and 2 only: partition 3 is quiet, so the input's CTI stays back and
   nothing is released however far the other partitions are;
2. a CTI record (a heartbeat: ``"kind": "CTI"``) in partition 3: the CTI moves, windows are released;
3. more readings in every partition, one of them older than its partition's CTI (dropped: its late
   record names its partition and offset); then ``stop()`` flushes the rest.

At the end the live output is checked against a batch run over ``spark.read.format("kafka")`` of
the whole topic: the same events, none twice. Spark's Kafka connector must be on the session's
``spark.jars``: by default the session asks for it by its Maven coordinates
(``spark.jars.packages``, fetched by Spark at start); ``--jars`` gives the jar files instead.
"""
from __future__ import annotations

import argparse
import json
import os
import tempfile
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Sequence

import pyspark
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

import streamql as sq
from streamql.running import MICRO_BATCH

PARTITIONS = [0, 1, 2, 3]
T0 = datetime(2026, 11, 22, 8, 0, tzinfo=timezone.utc)


@dataclass(frozen=True)
class Reading:
    meter: str
    consumption: float


@dataclass(frozen=True)
class MeterCount:
    meter: str
    readings: int


READINGS = sq.input("readings", Reading)
COUNTS = (READINGS.group_by(lambda e: e.meter).hopping_window(timedelta(minutes=2), timedelta(minutes=1))
          .select(lambda w: MeterCount(w.key, w.count())))
#: per partition: a CTI after every 4th reading, 30 s behind; readings older than it are dropped
SETTINGS = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=4, delay=timedelta(seconds=30), flush=True))
#: a record's value: a reading, or a CTI record (``kind`` "CTI", only ``ts``)
VALUE = T.StructType([T.StructField("kind", T.StringType()), T.StructField("ts", T.TimestampType()),
                      T.StructField("meter", T.StringType()), T.StructField("consumption", T.DoubleType())])


def reading(partition: int, minute: float, number: int) -> tuple[int, str, str]:
    """A (partition, key, value) record: meter ``m<partition>`` or ``m<partition + 4>``."""
    meter = f"m{partition + 4 * (number % 2)}"
    value = {"kind": "INSERT", "ts": (T0 + timedelta(minutes=minute)).isoformat(), "meter": meter,
             "consumption": float(100 + (number * 37) % 90)}
    return partition, meter, json.dumps(value)


def heartbeat(partition: int, minute: float) -> tuple[int, str, str]:
    return partition, "cti", json.dumps({"kind": "CTI", "ts": (T0 + timedelta(minutes=minute)).isoformat()})


def produce(spark: SparkSession, bootstrap: str, topic: str, records: Sequence[tuple[int, str, str]]) -> None:
    """Writes the records with Spark's Kafka sink, each to its own partition, in this order."""
    frame = spark.createDataFrame(list(records), "partition int, key string, value string").coalesce(1)
    frame.write.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("topic", topic).save()


def parsed(records: DataFrame) -> DataFrame:
    """Kafka's records (key, value, topic, partition, offset, ...) as readings: the value's JSON
    fields, and the record's partition and offset."""
    value = F.from_json(F.col("value").cast("string"), VALUE)
    return records.select(value.alias("v"), "partition", "offset").select("v.*", "partition", "offset")


def bind(spark: SparkSession, records: DataFrame) -> sq.Binder:
    return sq.Binder(spark).bind(READINGS, parsed(records), start="ts", kind="kind", arrival="offset",
                                 partition="partition", partitions=PARTITIONS, advance_time=SETTINGS)


def session(jars: str | None) -> SparkSession:
    if jars:
        return sq.local_session("local[2]", **{"spark.jars": jars, "spark.sql.shuffle.partitions": "2"})
    package = f"org.apache.spark:spark-sql-kafka-0-10_2.13:{pyspark.__version__}"
    return sq.local_session("local[2]", **{"spark.jars.packages": package, "spark.sql.shuffle.partitions": "2"})


def clock(t: datetime | None) -> str:
    """A CTI as the example prints it (``none`` before the first)."""
    return "none" if t is None else "INFINITY" if t == sq.INFINITY else f"{t:%H:%M:%S}"


def rounds() -> list[list[tuple[int, str, str]]]:
    """The records of the three rounds."""
    one = [reading(p, minute=0.5 * i, number=i) for p in (0, 1, 2) for i in range(12)]
    two = [heartbeat(3, minute=4)]
    three = [reading(p, minute=6 + 0.5 * i, number=i) for p in PARTITIONS for i in range(6)]
    three.append(reading(1, minute=6.0, number=99))  # older than partition 1's CTI by now: dropped
    return [one, two, three]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bootstrap", required=True, help="the Kafka broker, host:port")
    parser.add_argument("--topic", default=None, help="a new topic's name (default: a fresh one)")
    parser.add_argument("--jars", default=None, help="Spark's Kafka connector jars, comma-separated")
    args = parser.parse_args()
    topic = args.topic or f"meter-readings-{uuid.uuid4().hex[:8]}"
    spark = session(args.jars)
    spark.sparkContext.setLogLevel("ERROR")
    work = tempfile.mkdtemp(prefix="kafka-live-")
    sink, late_sink = os.path.join(work, "out"), os.path.join(work, "late")
    # the topic must have four partitions: created so (kafka-topics.sh --create --partitions 4), or
    # by the first write when the broker's num.partitions is 4
    records = rounds()
    stream = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", args.bootstrap)
              .option("subscribe", topic).option("startingOffsets", "earliest")
              .option("maxOffsetsPerTrigger", 16).load())
    running = None
    for number, records_of_round in enumerate(records, start=1):
        produce(spark, args.bootstrap, topic, records_of_round)
        if running is None:
            running = bind(spark, stream).start(COUNTS, sink=sink, checkpoint=os.path.join(work, "ck"),
                                                late_sink=late_sink)
        seen = len(running.progress)
        running.process_all_available()
        steps = running.progress[seen:]
        released = sum(p.released for p in steps)
        partitions = ", ".join(f"{p} {clock(cti)}" for p, cti in sorted(steps[-1].partition_ctis["readings"].items()))
        print(f"round {number}: {sum(p.input_rows['readings'] for p in steps)} records in {len(steps)} micro-batches, "
              f"input CTI {clock(steps[-1].input_ctis['readings'])} (partitions {partitions}), released {released}")
    assert running is not None
    running.stop()
    print(f"stop (flush): released {running.progress[-1].released}")
    live = sorted(tuple(r) for r in spark.read.parquet(sink).drop(MICRO_BATCH).collect())
    whole = (spark.read.format("kafka").option("kafka.bootstrap.servers", args.bootstrap).option("subscribe", topic)
             .option("startingOffsets", "earliest").option("endingOffsets", "latest").load())
    batch = sorted(tuple(r) for r in bind(spark, whole).to_dataframe(COUNTS).collect())
    assert live == batch, "the live run released other events than the batch run"
    print(f"live == batch: {len(live)} windows, none twice")
    for late in spark.read.parquet(late_sink).collect():
        print(f"late: partition {late.partition} offset {late.arrival} {late.action}, "
              f"{late.payload.meter} at {late.start:%H:%M:%S} < CTI {late.cti:%H:%M:%S}")
    spark.stop()


if __name__ == "__main__":
    main()
