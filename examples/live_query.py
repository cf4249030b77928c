"""A live query: sliding averages per meter over a file directory that is being written to.

A writer thread drops a JSON file of readings into ``incoming/`` every second (ten readings per
file, three meters, one reading every 20 s of application time). The query — a 3-minute sliding
average per meter — runs on Structured Streaming; a CTI follows every fifth reading, 20 s behind,
so each micro-batch releases the averages up to that CTI. The main thread prints what each
micro-batch released as it lands in the sink; ``stop()`` flushes the rest. At the end the live
output is checked against a batch run over all the files: the same events, none twice.

Run it with ``.venv/bin/python examples/live_query.py`` (Java 17+ must be installed).
"""
from __future__ import annotations

import json
import os
import tempfile
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql import types as T

import streamql as sq

FILES, PER_FILE = 6, 10
T0 = datetime(2026, 11, 22, 8, 0, tzinfo=timezone.utc)


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
SETTINGS = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=5, delay=timedelta(seconds=20), flush=True),
                                  policy=sq.AdvanceTimePolicy.ADJUST)
SCHEMA = T.StructType([T.StructField("ts", T.TimestampType()), T.StructField("meter", T.StringType()),
                       T.StructField("consumption", T.DoubleType())])


def readings(number: int) -> list[dict[str, Any]]:
    first = number * PER_FILE
    return [{"ts": (T0 + timedelta(seconds=20 * i)).isoformat(), "meter": f"m{i % 3 + 1}",
             "consumption": float(100 + (i * 37) % 90)} for i in range(first, first + PER_FILE)]


def write_files(directory: str) -> None:
    """The writer: one file a second, each written under a hidden name and renamed when whole."""
    for number in range(FILES):
        hidden = os.path.join(directory, f".readings-{number:03d}.json")
        with open(hidden, "w") as out:
            out.writelines(json.dumps(r) + "\n" for r in readings(number))
        os.rename(hidden, os.path.join(directory, f"readings-{number:03d}.json"))
        time.sleep(1.0)


def show(spark: SparkSession, sink: str, batch: int) -> list[tuple[Any, ...]]:
    path = os.path.join(sink, f"micro_batch={batch}")
    if not os.path.exists(path):
        return []
    rows = sorted(tuple(r) for r in spark.read.parquet(path).collect())
    for start, end, meter, average in rows:
        print(f"    {start:%H:%M:%S}-{end:%H:%M:%S}  {meter}  {average:7.2f}")
    return rows


def main() -> None:
    # a local Spark whose Python workers run this interpreter (they import streamql), in UTC
    spark = sq.local_session(**{"spark.sql.shuffle.partitions": "4"})
    spark.sparkContext.setLogLevel("ERROR")
    work = tempfile.mkdtemp(prefix="streamql-live-")
    incoming, sink = os.path.join(work, "incoming"), os.path.join(work, "averages")
    os.makedirs(incoming)
    # one file per micro-batch, in the order the files arrive
    stream = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).json(incoming)
    running = sq.Binder(spark).bind(READINGS, stream, start="ts", advance_time=SETTINGS).start(
        AVERAGES, sink=sink, checkpoint=os.path.join(work, "checkpoint"), trigger="1 second")
    writer = threading.Thread(target=write_files, args=(incoming,))
    writer.start()
    live: list[tuple[Any, ...]] = []
    shown = 0
    while writer.is_alive() or shown < FILES:
        time.sleep(0.5)
        for p in running.progress[shown:]:
            print(f"micro-batch {p.batch}: {p.input_rows['readings']} readings in, CTI "
                  f"{p.output_cti:%H:%M:%S}, {p.released} averages released, {p.state_rows} rows of state "
                  f"({p.seconds:.1f} s)")
            live += show(spark, sink, p.batch)
            shown += 1
    running.process_all_available()
    for p in running.progress[shown:]:
        live += show(spark, sink, p.batch)
    running.stop()
    final = running.progress[-1]
    print(f"stopped: the flush (micro-batch {final.batch}) released {final.released} more")
    live += show(spark, sink, final.batch)

    every = spark.createDataFrame([r for n in range(FILES) for r in readings(n)]).selectExpr(
        "cast(ts as timestamp) as ts", "meter", "consumption").coalesce(1)
    expected = sq.Binder(spark).bind(READINGS, every, start="ts", advance_time=SETTINGS).collect(AVERAGES)
    as_rows = sorted((e.start.replace(tzinfo=None), e.end.replace(tzinfo=None), e.payload.meter, e.payload.average)
                     for e in expected)
    assert sorted(live) == as_rows, "the live run and the batch run differ"
    print(f"the live run released {len(live)} averages, the same as a batch run over all the files")


if __name__ == "__main__":
    main()
