"""The streaming rows of the benchmark (``benchmarks/run.py --only stream``).

Every row runs on Structured Streaming over a directory of parquet files, one file per micro-batch
(``maxFilesPerTrigger=1``), ``--stream-batch`` point events (100 k) per file, 10 ms apart over
1,000 meters, a CTI every 1,000 events 1 ms behind:

- **hopping counts** (60 s windows every 10 s, per meter) against Spark's own streaming
  aggregation, ``groupBy(window(ts, "60 seconds", "10 seconds"), meter).count()`` with a 1 ms
  watermark in append mode — the query a user would write instead; both outputs are compared;
- **sliding average** (``alter_duration(3 min)``, grouped snapshot average): Spark has no
  equivalent operator;
- **grouped join** (two inputs, each event lasting 1 s, joined on the meter);
- **followed by** (each reading followed by the next of its meter within 10 s: ``followed_by`` on
  one stream; Spark's streaming has no ``lead``, so no native row);
- **one event per micro-batch**: the fixed cost of a step (the hopping query);
- **floor**: a plain Structured Streaming job that reads the same files and writes them out unchanged.

Throughput: every file is in the directory when the query starts; events per second from the start
until everything is processed. Latency: the files arrive one at a time, a little slower than the
steps take; for each, the time from its arrival in the directory to the end of the micro-batch
that released its results (written to the sink), p50 and p95. Each row also shows the median step,
the Spark jobs per step (``RunningQuery.progress``) and the most state rows carried.
"""
from __future__ import annotations

import glob
import os
import shutil
import statistics
import tempfile
import threading
import time
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Callable, Sequence

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

import streamql as sq
from streamql.running import Progress

SCHEMA = T.StructType([T.StructField("ts", T.LongType()), T.StructField("meter", T.StringType()),
                       T.StructField("consumption", T.DoubleType())])
SETTINGS = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=1000, delay=timedelta(milliseconds=1)))
Source = Callable[[SparkSession, int, int], DataFrame]


@dataclass(frozen=True)
class Reading:
    meter: str
    consumption: float


@dataclass(frozen=True)
class MeterCount:
    meter: str
    count: int


@dataclass(frozen=True)
class MeterAverage:
    meter: str
    average: float


@dataclass(frozen=True)
class Gap:
    meter: str
    gap: float


@dataclass(frozen=True)
class Twice:
    meter: str
    first: float
    second: float


READINGS = sq.input("readings", Reading)
OTHER = sq.input("other", Reading)


def hopping_counts() -> sq.Stream[MeterCount]:
    return (READINGS.group_by(lambda e: e.meter).hopping_window(timedelta(seconds=60), timedelta(seconds=10))
            .select(lambda w: MeterCount(w.key, w.count())))


def sliding_average() -> sq.Stream[MeterAverage]:
    return (READINGS.alter_duration(timedelta(minutes=3)).group_by(lambda e: e.meter).snapshot_window()
            .select(lambda w: MeterAverage(w.key, w.avg(lambda e: e.consumption))))


def grouped_join() -> sq.Stream[Gap]:
    second = timedelta(seconds=1)
    return READINGS.alter_duration(second).join(OTHER.alter_duration(second), on=lambda l, r: l.meter == r.meter,
                                                select=lambda l, r: Gap(l.meter, l.consumption - r.consumption))


def next_reading() -> sq.Stream[Twice]:
    return READINGS.followed_by(READINGS, lambda a, b: a.meter == b.meter,
                                lambda a, b: Twice(a.meter, a.consumption, b.consumption),
                                within=timedelta(seconds=10))


def native_hopping_counts(stream: DataFrame) -> DataFrame:
    """What a user writes with Spark's own streaming aggregation for ``hopping_counts``."""
    return (stream.withColumn("t", F.timestamp_micros("ts")).withWatermark("t", "1 millisecond")
            .groupBy(F.window("t", "60 seconds", "10 seconds"), "meter").count())


def write_files(spark: SparkSession, source: Source, files: int, per_file: int, directory: str) -> list[str]:
    """``files`` parquet files of ``per_file`` consecutive events each (the stream cut in pieces),
    staged under ``directory``; returns their paths in stream order."""
    everything = source(spark, files * per_file, files).select("ts", "meter", "consumption")
    staging = os.path.join(directory, f"staging-{files}x{per_file}")
    everything.write.parquet(staging)
    parts = sorted(glob.glob(os.path.join(staging, "part-*.parquet")))
    assert len(parts) == files, f"expected {files} files, got {len(parts)}"
    return parts


def arrive(part: str, directory: str, number: int, stamp: float) -> float:
    """Puts file ``number`` into the watched ``directory`` whole (copied under a hidden name, then
    renamed) with modification time ``stamp`` (the file source takes files in that order);
    returns when it arrived."""
    os.makedirs(directory, exist_ok=True)
    hidden = os.path.join(directory, f".part-{number:05d}.parquet")
    shutil.copyfile(part, hidden)
    os.utime(hidden, (stamp, stamp))
    os.rename(hidden, os.path.join(directory, f"part-{number:05d}.parquet"))
    return time.time()


def all_arrived(parts: Sequence[str], directory: str) -> str:
    for number, part in enumerate(parts):
        arrive(part, directory, number, time.time() - 1000 + number)
    return directory


def stream(spark: SparkSession, directory: str) -> DataFrame:
    return spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).parquet(directory)


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


@dataclass(frozen=True)
class Run:
    """One streamql run: its time and what its steps reported."""

    seconds: float
    progress: list[Progress]
    sink: str

    @property
    def step_median(self) -> float:
        return statistics.median(p.seconds for p in self.progress)

    @property
    def jobs(self) -> str:
        jobs = [p.jobs for p in self.progress if p.jobs is not None]
        if not jobs:
            return "-"  # a Spark Connect session counts no jobs
        return f"{statistics.median(jobs):g}" + (f" (first {jobs[0]})" if jobs[0] != statistics.median(jobs) else "")

    @property
    def state(self) -> int:
        return max(p.state_rows for p in self.progress)


def ours(spark: SparkSession, q: sq.Stream[Any], inputs: dict[str, str], work: str, name: str) -> Run:
    """Runs ``q`` over the watched directories (by input name) until everything is processed."""
    binder = sq.Binder(spark)
    for input_name, directory in inputs.items():
        binder = binder.bind(READINGS if input_name == "readings" else OTHER, stream(spark, directory), start="ts",
                             advance_time=SETTINGS)
    sink = os.path.join(work, f"out-{name}")
    running = binder.start(q, sink=sink, checkpoint=os.path.join(work, f"ck-{name}"), feed=False)
    began = time.perf_counter()
    running.process_all_available()
    seconds = time.perf_counter() - began
    running.stop(flush=False)
    return Run(seconds, list(running.progress), sink)


def latencies(spark: SparkSession, q: sq.Stream[Any], parts: Sequence[str], interval: float, work: str,
              name: str) -> list[float]:
    """The files arrive one at a time, ``interval`` seconds apart: from each arrival to the end of
    the micro-batch that processed it."""
    paced = os.path.join(work, f"paced-{name}")
    os.makedirs(paced)
    live = sq.Binder(spark).bind(READINGS, stream(spark, paced), start="ts", advance_time=SETTINGS).start(
        q, sink=os.path.join(work, f"out-paced-{name}"), checkpoint=os.path.join(work, f"ck-paced-{name}"),
        feed=False)
    arrivals: list[float] = []

    def feed() -> None:
        for number, part in enumerate(parts):
            arrivals.append(arrive(part, paced, number, time.time()))
            time.sleep(interval)

    feeder = threading.Thread(target=feed)
    feeder.start()
    feeder.join()
    live.process_all_available()
    live.stop(flush=False)
    done = {p.batch: p.started + p.seconds for p in live.progress}
    return [done[k] - arrivals[k] for k in range(len(arrivals)) if k in done]


def native(spark: SparkSession, directory: str, work: str) -> tuple[float, str]:
    out = os.path.join(work, "out-native")
    query = (native_hopping_counts(stream(spark, directory)).writeStream.format("parquet").outputMode("append")
             .option("path", out).option("checkpointLocation", os.path.join(work, "ck-native")).start())
    began = time.perf_counter()
    query.processAllAvailable()
    seconds = time.perf_counter() - began
    query.stop()
    return seconds, out


def floor(spark: SparkSession, directory: str, work: str) -> float:
    query = (stream(spark, directory).writeStream.format("parquet").option("path", os.path.join(work, "copy"))
             .option("checkpointLocation", os.path.join(work, "ck-copy")).start())
    began = time.perf_counter()
    query.processAllAvailable()
    seconds = time.perf_counter() - began
    query.stop()
    return seconds


def same_windows(spark: SparkSession, ours_sink: str, native_out: str) -> str:
    """Whether streamql's released windows are Spark's, as (start, end, meter, count)."""
    mine = spark.read.parquet(ours_sink).select("start", "end", "meter", "count")
    theirs = spark.read.parquet(native_out).select(F.col("window.start").alias("start"),
                                                  F.col("window.end").alias("end"), "meter", "count")
    rows = mine.count()
    differ = mine.exceptAll(theirs).count() + theirs.exceptAll(mine).count()
    return f"{rows:,} windows, {'the same as Spark' if differ == 0 else f'{differ:,} rows differ from Spark'}"


def _line(label: str, events: int, run: Run, extra: str = "") -> str:
    return (f"  {label}: {events / run.seconds:,.0f} events/s ({run.seconds:.1f} s), step median "
            f"{run.step_median:.2f} s, jobs per step {run.jobs}, state at most {run.state:,} rows{extra}")


def _latency(values: Sequence[float], interval: float) -> str:
    return (f"latency p50 {percentile(values, 0.5):.2f} s, p95 {percentile(values, 0.95):.2f} s "
            f"(files every {interval:.1f} s)")


def run(spark: SparkSession, source: Source, files: int, per_file: int) -> list[str]:
    """Runs every row and returns the lines of their table."""
    work = tempfile.mkdtemp(prefix="streamql-stream-bench-")
    try:
        parts = write_files(spark, source, files, per_file, work)
        events = files * per_file
        watched = all_arrived(parts, os.path.join(work, "in"))
        lines = [f"streaming: {files} micro-batches of {per_file / 1e3:g} k events (one parquet file each), "
                 f"{events:,} events"]
        # --- hopping counts, streamql and Spark's own aggregation
        hopping = ours(spark, hopping_counts(), {"readings": watched}, work, "hopping")
        native_s, native_out = native(spark, watched, work)
        interval = 1.5 * hopping.step_median
        hopping_latency = latencies(spark, hopping_counts(), parts, interval, work, "hopping")
        lines += ["hopping 60 s / 10 s counts per meter",
                  _line("streamql", events, hopping, f"; {_latency(hopping_latency, interval)}"),
                  f"  Spark's own streaming aggregation: {events / native_s:,.0f} events/s ({native_s:.1f} s); "
                  f"ratio streamql / Spark {hopping.seconds / native_s:.2f}; "
                  f"{same_windows(spark, hopping.sink, native_out)}"]
        # --- sliding average
        sliding = ours(spark, sliding_average(), {"readings": watched}, work, "sliding")
        interval = 1.5 * sliding.step_median
        sliding_latency = latencies(spark, sliding_average(), parts, interval, work, "sliding")
        lines += ["sliding average (alter_duration 3 min, grouped snapshot avg; no Spark equivalent)",
                  _line("streamql", events, sliding, f"; {_latency(sliding_latency, interval)}")]
        # --- grouped join: the same files read as two inputs
        joined = ours(spark, grouped_join(), {"readings": watched, "other": watched}, work, "join")
        lines += ["grouped join (two inputs, 1 s lifetimes, on the meter)",
                  _line("streamql", 2 * events, joined)]
        # --- a pattern: each reading followed by its meter's next within 10 s
        pattern = ours(spark, next_reading(), {"readings": watched}, work, "followed_by")
        lines += ["followed_by (a reading and its meter's next within 10 s; no Spark equivalent)",
                  _line("streamql", events, pattern)]
        # --- one event per micro-batch: the fixed cost of a step
        singles = write_files(spark, source, 12, 1, work)
        single = ours(spark, hopping_counts(), {"readings": all_arrived(singles, os.path.join(work, "in-single"))},
                      work, "single")
        interval = max(1.0, 1.5 * single.step_median)
        single_latency = latencies(spark, hopping_counts(), singles, interval, work, "single")
        lines += ["one event per micro-batch (hopping counts)",
                  f"  step median {single.step_median:.2f} s, jobs per step {single.jobs}; "
                  f"{_latency(single_latency, interval)}"]
        # --- the floor
        floor_s = floor(spark, watched, work)
        lines += [f"floor (read + write unchanged): {events / floor_s:,.0f} events/s ({floor_s:.1f} s)"]
        return lines
    finally:
        shutil.rmtree(work, ignore_errors=True)
