"""A streaming job for the crash test: run as a child process (``python streaming_job.py SOURCE
SINK CHECKPOINT``), it runs the sliding-average query on a file directory, one file per
micro-batch, until it is killed. The test imports ``QUERY``/``SCHEMA``/``SETTINGS`` to run the same
query again and in batch."""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from datetime import timedelta

from pyspark.sql import SparkSession
from pyspark.sql import types as T

import streamql as sq


@dataclass(frozen=True)
class Reading:
    meter: str
    consumption: float


@dataclass(frozen=True)
class Average:
    meter: str
    average: float


SCHEMA = T.StructType([T.StructField("ts", T.LongType()), T.StructField("meter", T.StringType()),
                       T.StructField("consumption", T.DoubleType())])
SETTINGS = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=5, flush=True))
READINGS = sq.input("readings", Reading)
QUERY = (READINGS.alter_duration(timedelta(microseconds=35)).group_by(lambda e: e.meter).snapshot_window()
         .select(lambda w: Average(w.key, w.avg(lambda e: e.consumption))))


def file_rows(number: int, size: int = 20) -> list[str]:
    """JSON lines of file ``number``: readings every 10 microseconds, four meters."""
    first = number * size
    return [f'{{"ts": {10 * i}, "meter": "m{i % 4}", "consumption": {float((i * 7) % 13)}}}\n'
            for i in range(first, first + size)]


def bind(spark: SparkSession, source: str) -> sq.Binder:
    stream = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).json(source)
    return sq.Binder(spark).bind(READINGS, stream, start="ts", advance_time=SETTINGS)


def main(source: str, sink: str, checkpoint: str) -> None:
    from support.jvm import TEST_JVM_OPTIONS

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (SparkSession.builder.master("local[2]").config("spark.sql.shuffle.partitions", "2")
             .config("spark.ui.enabled", "false").config("spark.sql.session.timeZone", "UTC")
             .config("spark.driver.extraJavaOptions", TEST_JVM_OPTIONS)
             .config("spark.python.sql.dataFrameDebugging.enabled", "false")
             .getOrCreate())
    running = bind(spark, source).start(QUERY, sink=sink, checkpoint=checkpoint)
    running.await_termination()


if __name__ == "__main__":
    main(*sys.argv[1:4])
