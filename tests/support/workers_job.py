"""A child process for the worker-check tests (one SparkContext per process, and each test needs its
own): ``python workers_job.py check MASTER`` builds a session the usual way (the workers run
``PYSPARK_PYTHON``, which the test points at an interpreter without streamql) and runs a query;
``python workers_job.py session`` builds one with ``sq.local_session`` (``PYSPARK_PYTHON`` unset)
and runs it. Each prints ``key=value`` lines for the test to read.

It imports nothing from the tests: the test runs it from a scratch directory without PYTHONPATH,
so that only the driver's own interpreter (where streamql is installed) makes streamql importable.
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from pyspark.sql import SparkSession

import streamql as sq
from streamql.spark.runtime.workers import JOB_GROUP, run_probe


@dataclass(frozen=True)
class Reading:
    meter: str
    watts: float


T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)


def rows(count: int) -> list[tuple[int, int, str, float]]:
    """(arrival, seconds after T0, meter, watts): ``count`` readings in rising time, after every 7th one
    60 s back (late: a CTI generated since lies at most 41 s back); several late readings in every
    scan unit."""
    out: list[tuple[int, int, str, float]] = []
    for k in range(count):
        out.append((len(out), 1_000 + 10 * k, f"m{k % 5}", float(100 * k % 700)))
        if k % 7 == 6:
            out.append((len(out), 1_000 + 10 * k - 60, "late", float(k)))
    return out


def run_query(spark: SparkSession, count: int) -> None:
    """A query with CTI generation and DROP (the arrival scan runs in Python workers) over four
    partitions whose rows only the arrival column orders, on Spark and in the reference evaluator;
    prints ``equal=True`` when they agree."""
    readings = sq.input("readings", Reading, shape=sq.Shape.POINT)
    query = readings.where(lambda e: e.watts > 55).alter_duration(timedelta(seconds=15))
    settings = sq.AdvanceTimeSettings(
        sq.AdvanceTimeGeneration(every_events=4, delay=timedelta(seconds=1), flush=True),
        policy=sq.AdvanceTimePolicy.DROP)
    given = rows(count)
    df = spark.createDataFrame([(a, T0 + timedelta(seconds=s), m, w) for a, s, m, w in given],
                               "arrival long, ts timestamp, meter string, watts double").repartition(4)
    result = sq.Binder(spark).bind(readings, df, start="ts", arrival="arrival", advance_time=settings).run(query)
    items = [sq.Insert(T0 + timedelta(seconds=s), T0 + timedelta(seconds=s, microseconds=1), Reading(m, w))
             for _, s, m, w in given]
    expected = sq.reference.run(query, {"readings": sq.reference.ReferenceInput(items, settings)})
    print(f"events={len(result.events)} dropped={result.dropped} expected_dropped={expected.dropped}")
    print(f"equal={result == expected}")


def check(master: str) -> int:
    spark = (SparkSession.builder.master(master).appName("streamql-worker-check")
             .config("spark.ui.enabled", "false")
             .config("spark.executor.memory", "512m")
             # the first job waits until every executor of a local-cluster has registered
             .config("spark.scheduler.minRegisteredResourcesRatio", "1.0")
             .config("spark.scheduler.maxRegisteredResourcesWaitingTime", "120s")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    try:
        before = run_probe(spark.sparkContext)
        print(f"before={sorted(f.module for f in before.failures)}")
        try:
            run_query(spark, 42)
        except sq.BindingError as exc:
            print("BindingError:")
            print(exc)
        after = run_probe(spark.sparkContext)
        print(f"after={sorted(f.module for f in after.failures)}")
        tracker = spark.sparkContext.statusTracker()
        print(f"executors={len(tracker.getExecutorInfos()) - 1}")  # minus the driver
        print(f"check_jobs={len(tracker.getJobIdsForGroup(JOB_GROUP))}")
        print(f"query_jobs={len(tracker.getJobIdsForGroup(None))}")  # the jobs outside any job group
        return 0
    finally:
        spark.stop()


def session() -> int:
    spark = sq.local_session("local[1]", **{"spark.sql.shuffle.partitions": "3"})
    spark.sparkContext.setLogLevel("ERROR")
    try:
        conf = spark.sparkContext.getConf()
        print(f"same={sq.local_session() is spark}")
        print(f"time_zone={spark.conf.get('spark.sql.session.timeZone')}")
        print(f"shuffle_partitions={spark.conf.get('spark.sql.shuffle.partitions')}")
        print(f"ui={conf.get('spark.ui.enabled')}")
        print(f"conf_python={conf.get('spark.pyspark.python') == sys.executable}")
        print(f"env_python={os.environ.get('PYSPARK_PYTHON') == sys.executable}")
        print(f"worker_python={run_probe(spark.sparkContext).executable == sys.executable}")
        run_query(spark, 14)  # two late readings
        return 0
    finally:
        spark.stop()


if __name__ == "__main__":
    sys.exit(check(sys.argv[2]) if sys.argv[1] == "check" else session())
