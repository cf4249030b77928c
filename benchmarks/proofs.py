"""What proving arrival order costs: the scan summary (a Python worker pass) beside the native
proofs of docs/design-fewer-jobs.md, over one stored input, in one run.

    .venv/bin/python benchmarks/proofs.py [--events N] [--partitions P] [--repeat R]

The input is the ``alter`` row's (``run.readings``: points one per millisecond, slightly out of
order within the 1 ms CTI delay, none late), written once as parquet in ``P`` files and read
back, so every row reads the same files. Each row computes, per scan unit (a Spark partition in
storage order, ``monotonically_increasing_id() >> 33``), whether any event starts before the
greatest earlier start less the delay (what the summary's ``locally_certain`` decides for
``every_events`` generation; its other facts — counts, greatest start, greatest CTI row — are
aggregates), and brings one row per unit to the driver:

- ``read floor``: the aggregates only (count and greatest start per unit): no proof, one pass;
- ``scan summary``: streamql's summary pass (``mapInArrow`` through Arrow to a Python worker);
- ``window per unit``: a running maximum over a window partitioned by the unit, ordered by
  position (an exchange of the time columns and a sort per unit);
- ``collect per unit``: the unit's starts gathered in one array (``collect_list``, ordered by
  position with ``array_sort``) and walked by an ``aggregate`` higher-order function.

Every row's verdicts are checked equal (all false here: nothing is late). The table prints the
best of ``R`` runs, the ratio to the read floor and the Spark jobs of one run, with the load.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from typing import Callable

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

import streamql as sq
from streamql.spark.ingress import scan as ingress_scan
from streamql.spark.runtime.jobs import counting_jobs

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run as rows  # noqa: E402 - benchmarks/run.py, beside this file

DELAY = 1000  # the alter row's CTI delay, in microseconds

Proof = Callable[[DataFrame], list[tuple[int, bool]]]


def read_floor(df: DataFrame) -> list[tuple[int, bool]]:
    """Per unit its count and greatest start, no verdict (reported as not late)."""
    unit = F.shiftright(F.monotonically_increasing_id(), 33).alias("unit")  # the Spark partition
    units = df.select(unit, F.col("ts")).groupBy("unit").agg(F.count(F.lit(1)), F.max("ts")).collect()
    return sorted((int(r["unit"]), False) for r in units)


def window_per_unit(df: DataFrame) -> list[tuple[int, bool]]:
    """A running maximum of the earlier starts per unit, by position."""
    positioned = df.select(F.monotonically_increasing_id().alias("seq"), F.col("ts"))
    before = Window.partitionBy("unit").orderBy("seq").rowsBetween(Window.unboundedPreceding, -1)
    flagged = (positioned.withColumn("unit", F.shiftright(F.col("seq"), 33))
               .withColumn("late", F.col("ts") < F.max("ts").over(before) - F.lit(DELAY)))
    units = flagged.groupBy("unit").agg(F.max(F.coalesce(F.col("late"), F.lit(False))).alias("late")).collect()
    return sorted((int(r["unit"]), bool(r["late"])) for r in units)


def collect_per_unit(df: DataFrame) -> list[tuple[int, bool]]:
    """The unit's starts in one array, in position order, walked with ``aggregate``."""
    positioned = df.select(F.monotonically_increasing_id().alias("seq"), F.col("ts"))
    gathered = (positioned.groupBy(F.shiftright(F.col("seq"), 33).alias("unit"))
                .agg(F.array_sort(F.collect_list(F.struct("seq", "ts"))).alias("rows")))
    start = F.struct(F.lit(-(2 ** 62)).alias("high"), F.lit(False).alias("late"))
    walked = F.aggregate("rows", start, lambda acc, row: F.struct(
        F.greatest(acc["high"], row["ts"]).alias("high"),
        (acc["late"] | (row["ts"] < acc["high"] - F.lit(DELAY))).alias("late")))
    units = gathered.select("unit", walked["late"].alias("late")).collect()
    return sorted((int(r["unit"]), bool(r["late"])) for r in units)


def scan_summary(spark: SparkSession) -> Proof:
    """streamql's summary pass over the bound input (``scan._summarize``)."""
    source = sq.input("readings", rows.Reading)

    def proof(df: DataFrame) -> list[tuple[int, bool]]:
        binder = sq.Binder(spark).bind(source, df, start="ts", advance_time=rows.dropping())
        summarized = ingress_scan._summarize(binder.bindings["readings"], None)
        return sorted((int(u["unit"]), not u["locally_certain"]) for u in summarized.summaries)
    return proof


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=10_000_000)
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--late-every", type=int, default=None,
                        help="every n-th event 5 s late (the alter-late row's input): every verdict is then late")
    args = parser.parse_args()
    # one read partition per file (a unit each), as the files are small
    spark = sq.local_session("local[2]", **{"spark.sql.shuffle.partitions": "8",
                                            "spark.sql.files.maxPartitionBytes": "8m"})
    spark.sparkContext.setLogLevel("ERROR")
    scratch = tempfile.mkdtemp(prefix="streamql-proofs-")
    try:
        path = os.path.join(scratch, "input")
        rows.readings(spark, args.events, args.partitions, args.late_every).write.parquet(path)
        df = spark.read.parquet(path)
        proofs: dict[str, Proof] = {"read floor": read_floor, "scan summary": scan_summary(spark),
                                    "window per unit": window_per_unit, "collect per unit": collect_per_unit}
        proofs["scan summary"](df)  # the Python workers started, the worker check done
        results: dict[str, tuple[float, int | None, list[tuple[int, bool]]]] = {}
        failed: dict[str, str] = {}
        for name, proof in proofs.items():
            best, jobs, verdicts = float("inf"), None, []
            try:
                for _ in range(args.repeat):
                    with counting_jobs(spark, f"proof: {name}") as counted:
                        began = time.perf_counter()
                        verdicts = proof(df)
                        best = min(best, time.perf_counter() - began)
                    jobs = counted.jobs
            except Exception as exc:  # noqa: BLE001 - a proof that does not fit is a result too (it runs last)
                failed[name] = str(exc).strip().splitlines()[0][:160] if str(exc).strip() else type(exc).__name__
                break
            results[name] = (best, jobs, verdicts)
        verdicts_of = {name: [late for _, late in r[2]] for name, r in results.items() if name != "read floor"}
        agree = len({tuple(v) for v in verdicts_of.values()}) == 1
        floor = results["read floor"][0]
        print(f"\n{args.events:,} points in {args.partitions} parquet files, local[2]; load {os.getloadavg()[0]:.2f}"
              f" (1 min) after the run; verdicts agree: {agree}; units: {len(results['read floor'][2])}, "
              f"found late: {sum(results['scan summary'][2][i][1] for i in range(len(results['scan summary'][2])))}")
        print(f"| proof | best of {args.repeat} s | / read floor | jobs |")
        print("|---|---|---|---|")
        for name, (seconds, jobs, _) in results.items():
            print(f"| {name} | {seconds:.2f} | {seconds / floor:.2f} | {jobs} |")
        for name, reason in failed.items():
            print(f"| {name} | failed: {reason} | | |")
        if not agree:
            raise SystemExit(f"the proofs disagree: {verdicts_of}")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        spark.stop()


if __name__ == "__main__":
    main()
