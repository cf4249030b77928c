"""Delta Lake in and out: sliding averages per meter read from a Delta table, written to Delta.

Readings land in a Delta table in four commits. A batch run reads the table
(``spark.read.format("delta")``) and writes its averages as a Delta table
(``Binder.write(..., format="delta")``); a live run reads the same table as a stream, one commit per
micro-batch (``maxFilesPerTrigger``), into a Delta sink (``Binder.start(..., format="delta")``):
each micro-batch that released something is one commit of the sink, written idempotently
(``txnAppId``/``txnVersion``), so a crash and restart never writes a micro-batch twice. The table's
history is printed as any Delta reader sees it, and the live output is checked against the batch
run: the same events, none twice.

It needs Delta Lake's jars in the session (docs/kafka-and-delta.md): run it with PySpark 4.2 and
delta-spark 4.4.0 installed — ``python examples/delta_sink.py`` fetches the jars through
``spark.jars.packages``; with ``STREAMQL_DELTA_JARS`` naming a directory of jars it takes those
instead (the delta test group runs it so).
"""
from __future__ import annotations

import glob
import os
import tempfile
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

from pyspark.sql import SparkSession

import streamql as sq

COMMITS, PER_COMMIT = 4, 10
T0 = datetime(2026, 11, 22, 8, 0, tzinfo=timezone.utc)
#: Delta Lake 4.4.0 for Spark 4.2, Scala 2.13 (the artifact names the Spark version it is built for)
DELTA_PACKAGE = "io.delta:delta-spark_4.2_2.13:4.4.0"
DELTA_SETTINGS = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
}


@dataclass(frozen=True)
class Reading:
    meter: str
    consumption: float


@dataclass(frozen=True)
class MeterAverage:
    meter: str
    average: float


READINGS = sq.input("readings", Reading)
AVERAGES = (READINGS.alter_duration(timedelta(minutes=3)).group_by(lambda e: e.meter).snapshot_window()
            .select(lambda w: MeterAverage(w.key, w.avg(lambda e: e.consumption))))
SETTINGS = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=5, flush=True))


def delta_session() -> SparkSession:
    """A local session with Delta's jars, its SQL extension and its catalog."""
    jars = os.environ.get("STREAMQL_DELTA_JARS")
    where = ({"spark.jars": ",".join(sorted(glob.glob(os.path.join(jars, "*.jar"))))} if jars
             else {"spark.jars.packages": DELTA_PACKAGE})
    return sq.local_session("local[2]", **{"spark.sql.shuffle.partitions": "2", **where, **DELTA_SETTINGS})


def readings(spark: SparkSession, table: str) -> None:
    """The input table: ``COMMITS`` commits of ``PER_COMMIT`` readings, one file each; ``seq`` is
    the arrival order."""
    for commit in range(COMMITS):
        rows = [(T0 + timedelta(seconds=20 * i), f"m{i % 3}", float((i * 7) % 11), i)
                for i in range(commit * PER_COMMIT, (commit + 1) * PER_COMMIT)]
        spark.createDataFrame(rows, "ts timestamp, meter string, consumption double, seq long") \
            .coalesce(1).write.format("delta").mode("append").save(table)


def main(spark: SparkSession, work: str) -> None:
    table, batch_out = os.path.join(work, "readings"), os.path.join(work, "averages-batch")
    live_out, checkpoint = os.path.join(work, "averages-live"), os.path.join(work, "checkpoint")
    readings(spark, table)

    # batch: the table as a DataFrame, the averages written as a Delta table
    batch = sq.Binder(spark).bind(READINGS, spark.read.format("delta").load(table), start="ts", arrival="seq",
                                  advance_time=SETTINGS)
    result = batch.write(AVERAGES, batch_out, format="delta")
    print(f"batch: {spark.read.format('delta').load(batch_out).count()} averages, final CTI "
          f"{result.final_cti:%H:%M:%S}")

    # live: the table as a stream, one input commit per micro-batch, into a Delta sink
    stream = spark.readStream.format("delta").option("maxFilesPerTrigger", 1).load(table)
    live = sq.Binder(spark).bind(READINGS, stream, start="ts", arrival="seq", advance_time=SETTINGS)
    running = live.start(AVERAGES, sink=live_out, checkpoint=checkpoint, format="delta")
    running.process_all_available()
    running.stop()  # flush: a final micro-batch releases the rest
    for p in running.progress:
        print(f"micro-batch {p.batch}: {p.input_rows['readings']} rows in, {p.released} averages released")
    history = spark.sql(f"DESCRIBE HISTORY delta.`{live_out}`").orderBy("version")
    for row in history.select("version", "operation", "operationParameters").collect():
        print(f"sink version {row.version}: {row.operation} {dict(row.operationParameters)['mode']}")

    def rows_of(path: str) -> list[Any]:
        return sorted(spark.read.format("delta").load(path).select("start", "end", "meter", "average").collect())

    assert rows_of(live_out) == rows_of(batch_out), "the live output differs from the batch run's"
    print("live == batch: the same averages, none twice")


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as scratch:
        main(delta_session(), scratch)
