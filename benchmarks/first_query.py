"""What the first query of a session costs beside the second, for streamql and for the hand-written
PySpark baseline, each in sessions of its own, in one run.

    .venv/bin/python benchmarks/first_query.py [--only ROW,ROW] [--events N] [--sessions S]

A user running one query from a script pays for a fresh session: the JVM's warm-up (class
loading, the JIT, code generation) and, for streamql, the Python workers its arrival-order scan
runs in. The target is "the first query of a session within 1 s of the second"; this measures
both sides of it, and issue 39's own measure of it: a session whose JVM the hand-written job
warmed first (its first-run penalty is Spark's, not streamql's), then streamql's first query against
its second. For each row (``benchmarks/run.py``'s rows, default ``hopping-count`` and
``followed-by``) the input is written once as one parquet file (read back in the order it was
written), then every session is a new Python process with a new SparkSession (``run.session``)
that reads that file and runs the same job twice, timing each (the session's start-up is not
counted). A streamql session runs the streamql query, a baseline session the baseline's job, a
warmed session the baseline's job once (not timed) and then the streamql query twice, a workers
session as a warmed one with Spark's first Python job between (a ``mapInArrow`` that returns its
two rows, timed: the Python workers' start and the JVM's first Arrow work, which any PySpark job
with a Python function pays once a session);
``--sessions`` sessions of each, in turn, and the table prints the medians: first, second,
their difference, and the phases of streamql's first and second queries (the first one's scan
summary starts the Python workers and checks, in its own tasks, that they import streamql:
docs/design-fewer-jobs.md, step 2).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run as rows  # noqa: E402 - benchmarks/run.py, beside this file

from streamql.spark.runtime.phases import recording  # noqa: E402

DEFAULT_ROWS = "hopping-count,followed-by"
#: each row's events here (a script's query rather than the throughput rows' millions)
DEFAULT_EVENTS = 1_000_000


def child(side: str, row: str, stored: str) -> None:
    """One session: the row's job twice over the stored input (a warmed or workers session first
    runs the hand-written job, and a workers session then Spark's first Python job); prints the
    times, streamql's phases and that Python job's time as JSON."""
    spark = rows.session("streamql-first-query")
    case = next(c for c in rows.CASES if c.name == row)
    source = spark.read.parquet(stored)
    times: list[float] = []
    phases: list[str] = []
    python_first = None
    if side in ("warmed", "workers"):  # the JVM's own first job: the hand-written one, not timed
        warm = tempfile.mkdtemp(prefix="streamql-first-")
        case.baseline(source).write.mode("overwrite").parquet(warm)
        shutil.rmtree(warm, ignore_errors=True)
    if side == "workers":  # Spark's first Python job: no streamql in it
        began = time.perf_counter()
        spark.range(0, 2, numPartitions=2).mapInArrow(lambda batches: batches, "id long").collect()
        python_first = time.perf_counter() - began
    for _ in range(2):
        out = tempfile.mkdtemp(prefix="streamql-first-")
        began = time.perf_counter()
        if side != "baseline":
            binder, q = rows.binding(spark, case, source)
            with recording(spark) as recorded:
                binder.write(q, out, mode="overwrite")
            phases.append(recorded.table())
        else:
            case.baseline(source).write.mode("overwrite").parquet(out)
        times.append(time.perf_counter() - began)
        shutil.rmtree(out, ignore_errors=True)
    print(json.dumps({"times": times, "phases": phases, "python_first": python_first}))
    spark.stop()


def run_session(side: str, row: str, stored: str) -> dict[str, object]:
    """A new process, a new session: its two times and streamql's first phases."""
    done = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", side, row, stored],
                          capture_output=True, text=True, check=True, env=os.environ)
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", default=DEFAULT_ROWS)
    parser.add_argument("--events", type=int, default=DEFAULT_EVENTS)
    parser.add_argument("--sessions", type=int, default=3, help="sessions of each side per row")
    parser.add_argument("--child", nargs=3, metavar=("SIDE", "ROW", "STORED"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # Python workers use this interpreter
    if args.child is not None:
        child(*args.child)
        return 0
    names = [n.strip() for n in args.only.split(",") if n.strip()]
    unknown = sorted(set(names) - {c.name for c in rows.CASES})
    if unknown:
        parser.error(f"unknown rows {', '.join(unknown)}")
    load = os.getloadavg()
    table: list[tuple[str, str, float, float, list[str]]] = []
    pythons: list[tuple[str, float]] = []
    for row in names:
        case = next(c for c in rows.CASES if c.name == row)
        stored = tempfile.mkdtemp(prefix="streamql-first-input-")
        spark = rows.session("streamql-first-query")
        # one file: read back in the order it was written (the arrival order of an input without an
        # arrival column is the read order, and Spark orders the files of a directory by size)
        rows.row_source(spark, case, args.events, 8).coalesce(1).write.mode("overwrite").parquet(stored)
        spark.stop()
        results: dict[str, list[dict[str, object]]] = {"streamql": [], "baseline": [], "warmed": [], "workers": []}
        for _ in range(args.sessions):
            for side in results:
                results[side].append(run_session(side, row, stored))
        for side, runs in results.items():
            first = statistics.median(float(r["times"][0]) for r in runs)  # type: ignore[index]
            second = statistics.median(float(r["times"][1]) for r in runs)  # type: ignore[index]
            table.append((f"{row} ({args.events / 1e6:g} M events)", side, first, second,
                          runs[-1]["phases"] if side != "baseline" else []))  # type: ignore[arg-type]
        pythons.append((f"{row} ({args.events / 1e6:g} M events)",
                        statistics.median(float(r["python_first"]) for r in results["workers"])))  # type: ignore[arg-type]
        shutil.rmtree(stored, ignore_errors=True)
    print(f"\nload before: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; after: "
          + " ".join(f"{v:.2f}" for v in os.getloadavg()) + f"; medians of {args.sessions} sessions each")
    width = max(len(r[0]) for r in table)
    print(f"{'row':<{width}}  {'side':<8}  first s  second s  first - second")
    for label, side, first, second, _ in table:
        print(f"{label:<{width}}  {side:<8}  {first:7.2f}  {second:8.2f}  {first - second:14.2f}")
    for label, first_python in pythons:
        print(f"{label}: Spark's first Python job in a workers session (median) {first_python:.2f} s")
    for label, side, _, _, phases in table:
        for which, its in zip(("first", "second"), phases):
            print(f"{label}, {side}: streamql's {which} query (last session): {its}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
