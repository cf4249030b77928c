"""Runs one streamql query on a ``local-cluster`` Spark (2 workers, separate executor JVMs) and
compares ``Binder.run`` with ``sq.reference.run``. Exit code 0 only if they are equal.

Run by tests/cluster/test_local_cluster.py in its own process (one SparkContext per process):
``PYSPARK_PYTHON=$(which python) python tests/cluster/cluster_job.py``.
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Optional

from pyspark.sql import SparkSession

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import streamql as sq  # noqa: E402
from streamql.events import InputItem  # noqa: E402
from support.frames import frame  # noqa: E402


@dataclass(frozen=True)
class Reading:
    meter: int
    watts: int
    note: Optional[str]


@dataclass(frozen=True)
class Load:
    meter: int
    kilowatts: float
    label: str


def items() -> list[InputItem[Reading]]:
    """Points in rising time with a late one (start 25 ticks back) after every 7th, a CTI row,
    and a few that lie behind it: several late events in every scan unit."""
    out: list[InputItem[Reading]] = []
    for k in range(120):
        start = 1_000 + 10 * k
        out.append(sq.Insert(start, start + 1, Reading(k % 5, 100 * k, None if k % 3 else f"n{k}")))
        if k % 7 == 6:
            out.append(sq.Insert(start - 25, start - 24, Reading(9, k, "late")))
        if k == 60:
            out.append(sq.Cti(start + 40))
    return out


def main() -> int:
    python = os.environ.get("PYSPARK_PYTHON", sys.executable)
    spark = (
        SparkSession.builder.master("local-cluster[2,1,1024]")
        .appName("streamql-local-cluster")
        .config("spark.executor.memory", "512m")
        # as tests/conftest.py: the first JIT tier only, in the driver and the executors
        .config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1")
        .config("spark.executor.extraJavaOptions", "-XX:TieredStopAtLevel=1")
        .config("spark.python.sql.dataFrameDebugging.enabled", "false")
        # the first job waits until both executors have registered
        .config("spark.scheduler.minRegisteredResourcesRatio", "1.0")
        .config("spark.scheduler.maxRegisteredResourcesWaitingTime", "120s")
        .config("spark.sql.shuffle.partitions", "3")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.pyspark.python", python)
        .config("spark.executorEnv.PYTHONPATH", os.pathsep.join([str(ROOT), str(ROOT / "tests")]))
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    try:
        source = sq.input("readings", Reading, shape=sq.Shape.POINT)
        query = (source.where(lambda e: e.watts % 200 != 100)
                 .select(lambda e: Load(e.meter, e.watts / 1000, sq.coalesce(e.note, "-")))
                 .alter_duration(timedelta(microseconds=15)))
        settings = sq.AdvanceTimeSettings(
            sq.AdvanceTimeGeneration(every_events=4, delay=timedelta(microseconds=5), flush=True),
            policy=sq.AdvanceTimePolicy.DROP)
        given = items()
        expected = sq.reference.run(query, {"readings": sq.reference.ReferenceInput(given, settings)})
        df = frame(spark, Reading, sq.Shape.POINT, given, partitions=6, arrival=True, seed=5)
        partitions = df.rdd.getNumPartitions()
        actual = (sq.Binder(spark)
                  .bind(source, df, start="start", kind="kind", arrival="arrival", advance_time=settings)
                  .run(query))
        executors = spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() - 1  # minus the driver
        print(f"executors={executors} partitions={partitions} events={len(actual.events)} "
              f"dropped={actual.dropped} final_cti={actual.final_cti}")
        if executors < 2 or expected.dropped == 0:
            print(f"setup is not what the test needs: executors={executors}, expected dropped={expected.dropped}")
            return 2
        if actual != expected:
            print("Binder.run:", actual)
            print("reference: ", expected)
            return 1
        return 0
    finally:
        spark.stop()


if __name__ == "__main__":
    sys.exit(main())
