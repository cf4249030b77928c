"""The streaming rows of the benchmark (``benchmarks/run.py --only stream``).

The sliding-average query (``alter_duration(3 min)``, grouped snapshot average over 1,000 meters,
a CTI every 1,000 events 1 ms behind) runs on Structured Streaming over a directory of parquet
files, one file of ``--stream-batch`` events (100 k) per micro-batch (``maxFilesPerTrigger=1``):

- **throughput**: every file is in the directory when the query starts; events per second from
  the start until everything is processed. The floor is a plain Structured Streaming job that
  reads the same files the same way and writes them out unchanged (parquet file sink).
- **latency**: the files arrive one at a time, at a pace the query keeps up with; for each, the
  time from its arrival in the directory to the end of the micro-batch that released its
  results (written to the sink), p50 and p95.
"""
from __future__ import annotations

import glob
import os
import shutil
import statistics
import tempfile
import threading
import time
from datetime import timedelta
from typing import Any, Callable

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T

import streamql as sq

SCHEMA = T.StructType([T.StructField("ts", T.LongType()), T.StructField("meter", T.StringType()),
                       T.StructField("consumption", T.DoubleType())])
SETTINGS = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=1000, delay=timedelta(milliseconds=1)))


def write_files(spark: SparkSession, source: Callable[[SparkSession, int, int], DataFrame], files: int,
                per_file: int, directory: str) -> list[str]:
    """``files`` parquet files of ``per_file`` consecutive events each (the stream cut in pieces),
    staged under ``directory``; returns their paths in stream order."""
    everything = source(spark, files * per_file, files).select("ts", "meter", "consumption")
    staging = os.path.join(directory, "staging")
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


def stream(spark: SparkSession, directory: str) -> DataFrame:
    return spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).parquet(directory)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def run(spark: SparkSession, source: Callable[[SparkSession, int, int], DataFrame],
        query: Callable[[], tuple[sq.Stream[Any], sq.Stream[Any]]], files: int, per_file: int) -> list[str]:
    """Runs the three measurements and returns the lines of their table."""
    work = tempfile.mkdtemp(prefix="streamql-stream-bench-")
    try:
        parts = write_files(spark, source, files, per_file, work)
        events = files * per_file
        # --- throughput, streamql
        watched = os.path.join(work, "in")
        for number, part in enumerate(parts):
            arrive(part, watched, number, time.time() - 1000 + number)
        inp, q = query()
        running = sq.Binder(spark).bind(inp, stream(spark, watched), start="ts", advance_time=SETTINGS).start(
            q, sink=os.path.join(work, "out"), checkpoint=os.path.join(work, "ck"), feed=False)
        began = time.perf_counter()
        running.process_all_available()
        ours = time.perf_counter() - began
        running.stop(flush=False)
        steps = [p.seconds for p in running.progress]
        state = max(p.state_rows for p in running.progress)
        released = sum(p.released for p in running.progress)
        # --- throughput, the floor: read the files, write them out unchanged
        floor_query = (stream(spark, watched).writeStream.format("parquet")
                       .option("path", os.path.join(work, "copy")).option("checkpointLocation",
                                                                           os.path.join(work, "ck-copy")).start())
        began = time.perf_counter()
        floor_query.processAllAvailable()
        floor = time.perf_counter() - began
        floor_query.stop()
        # --- latency: files arrive one at a time, a little slower than the steps take
        paced = os.path.join(work, "paced")
        os.makedirs(paced)
        inp, q = query()
        live = sq.Binder(spark).bind(inp, stream(spark, paced), start="ts", advance_time=SETTINGS).start(
            q, sink=os.path.join(work, "out-paced"), checkpoint=os.path.join(work, "ck-paced"), feed=False)
        interval = 1.5 * statistics.median(steps)
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
        latencies = [done[k] - arrivals[k] for k in range(len(arrivals)) if k in done]
        return [
            f"{'streaming (sliding avg, ' + f'{per_file / 1e3:g} k events per micro-batch, {files} micro-batches)'}",
            f"  throughput: streamql {events / ours:,.0f} events/s, floor (read + write unchanged) "
            f"{events / floor:,.0f} events/s, ratio {ours / floor:.2f} (time {ours:.1f} s vs {floor:.1f} s)",
            f"  latency from a file's arrival to its release: p50 {percentile(latencies, 0.5):.2f} s, "
            f"p95 {percentile(latencies, 0.95):.2f} s (files every {interval:.1f} s)",
            f"  micro-batch step: median {statistics.median(steps):.2f} s; carried state at most {state:,} rows; "
            f"{released:,} averages released",
        ]
    finally:
        shutil.rmtree(work, ignore_errors=True)
