"""Where a live step's time goes: the sliding-average row of ``benchmarks/streaming.py``
(``alter_duration(3 min)``, grouped snapshot average over 1,000 meters, a CTI every 1,000 events)
run with ``RunningQuery.record_phases``, against the floor (a plain Structured Streaming job that
reads the same files and writes them out unchanged) in the same session.

    .venv/bin/python benchmarks/step_phases.py [--files 5] [--per-file 100000] [--shuffle-partitions 200]

Prints, per phase, the median over the steps after the first (the first apart) of its own wall
seconds and Spark jobs (``streamql.spark.runtime.phases``: a phase inside another is charged its
own time only; ``other`` is what ran outside every named phase), the median step, and the floor's
median micro-batch (Structured Streaming's ``triggerExecution``) — run before and after ours, the
mean of the two — with the ratio; then each phase's jobs by their own time (submission to
completion, from Spark's status store) and what the driver spent outside them, and the last step's
sink write taken apart.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from typing import Any, Sequence

from pyspark.sql import DataFrame, SparkSession

import streamql as sq
from streamql.events import Shape
from streamql.running import Progress, RunningQuery
from streamql.spark.streaming.frontier import FRONTIER
from streamql.spark.streaming.step import step

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run as bench  # noqa: E402 - benchmarks/run.py, beside this file: the session and the meters
import streaming  # noqa: E402 - benchmarks/streaming.py


def floor_batches(spark: SparkSession, parts: Sequence[str], work: str, name: str) -> list[float]:
    """The floor's micro-batches (seconds each, ``triggerExecution``) over ``parts``."""
    watched = streaming.all_arrived(parts, os.path.join(work, f"in-{name}"))
    query = (streaming.stream(spark, watched).writeStream.format("parquet").option("path", os.path.join(work, name))
             .option("checkpointLocation", os.path.join(work, f"ck-{name}")).start())
    query.processAllAvailable()
    progress = [p for p in query.recentProgress if p["numInputRows"] > 0]
    query.stop()
    return [p["durationMs"]["triggerExecution"] / 1000 for p in progress]


def sliding_steps(spark: SparkSession, parts: Sequence[str], work: str) -> tuple[list[Progress], float, list[str]]:
    """The sliding average's steps over ``parts``, phases recorded (the files arrive once the query
    runs with the recording on, all at once: each step takes one file as soon as it can), the
    seconds until all were processed, and the last step's sink write taken apart."""
    watched = os.path.join(work, "in-sliding")
    os.makedirs(watched)
    running = (sq.Binder(spark).bind(streaming.READINGS, streaming.stream(spark, watched), start="ts",
                                     advance_time=streaming.SETTINGS)
               .start(streaming.sliding_average(), sink=os.path.join(work, "out-sliding"),
                      checkpoint=os.path.join(work, "ck-sliding"), feed=False))
    running.record_phases()
    began = time.perf_counter()
    streaming.all_arrived(parts, watched)
    running.process_all_available()
    seconds = time.perf_counter() - began
    running.stop(flush=False)
    return list(running.progress), seconds, sink_write_apart(spark, running, parts)


def _noop(frame: DataFrame) -> float:
    began = time.perf_counter()
    frame.write.format("noop").mode("overwrite").save()
    return time.perf_counter() - began


def sink_write_apart(spark: SparkSession, running: RunningQuery[Any], parts: Sequence[str]) -> list[str]:
    """The last step's sink write taken apart, after the run: the step again from the state the one
    before committed (read from its files), each cached frame computed by a write to Spark's
    ``noop`` sink in the order the sink write computes them (the accepted events: the carried ones
    and the new file's; the plan's output: the sweep; then the release minus what was released
    before). A diagnostic: it reads the runner's query (private) for its plan and state store."""
    query = next(iter(running._runner.queries.values()))
    batch = len(parts) - 1
    carried = query.store.carried(batch - 1, spark)
    new = {"readings": spark.read.schema(streaming.SCHEMA).parquet(parts[batch])}
    outcome = step(spark, query.plan, carried, new, batch)
    try:
        frontier = carried.partials.get(FRONTIER)
        if frontier is not None:  # the frontier carried: the new events swept with it, nothing taken away
            return [f"  the accepted events (new, cached): {sum(_noop(f) for f in outcome.persisted):.2f} s",
                    f"  the sweep and its release: {_noop(outcome.released_now[Shape.INTERVAL]):.2f} s",
                    f"  carried frontier {frontier.count():,} rows, output {outcome.candidates.count():,} rows"]
        *inputs, output = outcome.persisted
        return [f"  the accepted events (carried + new, cached): {sum(_noop(f) for f in inputs):.2f} s",
                f"  the plan's output (the sweep, cached): {_noop(output):.2f} s",
                f"  the release (output minus released before): {_noop(outcome.released_now[Shape.INTERVAL]):.2f} s",
                f"  carried events {carried.events['readings'].count():,} rows, released set "
                f"{carried.released[Shape.INTERVAL.name].count():,} rows, output {output.count():,} rows"]
    finally:
        outcome.unpersist()


def _median(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return statistics.median(known) if known else None


def table(steps: Sequence[Progress], floor: float) -> list[str]:
    """Per phase: the first step's seconds (jobs), the median of the later steps'."""
    first, later = steps[0], steps[1:] or steps[:1]
    names = list(dict.fromkeys(name for p in steps for name in p.phases))
    lines = [f"{'phase':<22} {'first s':>8} {'jobs':>5} {'median s':>9} {'jobs':>5} {'x floor':>8}"]
    for name in names:
        f_s, f_j = first.phases.get(name, (0.0, 0))
        seconds = _median([p.phases.get(name, (0.0, 0))[0] for p in later]) or 0.0
        jobs = _median([p.phases.get(name, (0.0, 0))[1] for p in later])
        lines.append(f"{name:<22} {f_s:8.2f} {f_j if f_j is not None else '-':>5} {seconds:9.2f} "
                     f"{jobs if jobs is not None else '-':>5} {seconds / floor:8.2f}")
    step_s = statistics.median(p.seconds for p in later)
    step_jobs = _median([p.jobs for p in later])
    lines.append(f"{'step (whole)':<22} {first.seconds:8.2f} {first.jobs if first.jobs is not None else '-':>5} "
                 f"{step_s:9.2f} {step_jobs if step_jobs is not None else '-':>5} {step_s / floor:8.2f}")
    return lines


def job_times(spark: SparkSession, steps: Sequence[Progress]) -> list[str]:
    """The steps' Spark jobs against the driver's time around them: each job's own time (its
    submission to its completion, from Spark's status store, which a classic session keeps with its
    UI off too) by the phase that ran it (its description, ``streamql: <phase>``), and what is left of
    the step; medians of the steps after the first."""
    store = spark.sparkContext._jsc.sc().statusStore()
    listed = store.jobsList(None)
    jobs: list[tuple[float, float, str]] = []  # submitted, seconds (epoch), the phase
    for k in range(listed.size()):
        job = listed.apply(k)
        if job.submissionTime().isEmpty() or job.completionTime().isEmpty():
            continue
        submitted, completed = job.submissionTime().get().getTime(), job.completionTime().get().getTime()
        described = "" if job.description().isEmpty() else str(job.description().get())
        jobs.append((submitted / 1000, (completed - submitted) / 1000, described.removeprefix("streamql: ")))
    by_phase: dict[str, list[float]] = {}
    in_jobs: list[float] = []
    for p in steps[1:] or steps[:1]:
        mine = [(name, seconds) for at, seconds, name in jobs if p.started <= at <= p.started + p.seconds]
        for name in {name for name, _ in mine}:
            by_phase.setdefault(name, []).append(sum(seconds for n, seconds in mine if n == name))
        in_jobs.append(sum(seconds for _, seconds in mine))
    step_s = statistics.median(p.seconds for p in steps[1:] or steps[:1])
    spent = statistics.median(in_jobs)
    return [*(f"  {name}: its jobs {statistics.median(times):.2f} s" for name, times in by_phase.items()),
            f"  every job of the step {spent:.2f} s; the driver, outside them, {step_s - spent:.2f} s "
            f"(the step's median {step_s:.2f} s, less the median of its jobs)"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=5, help="micro-batches (one parquet file each)")
    parser.add_argument("--per-file", type=int, default=100_000, help="point events per file")
    parser.add_argument("--shuffle-partitions", type=int, default=None,
                        help="the session's spark.sql.shuffle.partitions (default: the benchmarks' 8; Spark's is 200)")
    args = parser.parse_args()
    spark = bench.session("streamql step phases")
    if args.shuffle_partitions is not None:
        spark.conf.set("spark.sql.shuffle.partitions", str(args.shuffle_partitions))
    work = tempfile.mkdtemp(prefix="streamql-step-phases-")
    try:
        parts = streaming.write_files(spark, bench.meters, args.files, args.per_file, work)
        load = os.getloadavg()
        before = floor_batches(spark, parts, work, "floor-before")
        steps, ours_s, apart = sliding_steps(spark, parts, work)
        timed = job_times(spark, steps)
        after = floor_batches(spark, parts, work, "floor-after")
        load_after = os.getloadavg()
        floor = (statistics.median(before) + statistics.median(after)) / 2
        print(f"sliding average, {args.files} micro-batches of {args.per_file:,} events, "
              f"spark.sql.shuffle.partitions={spark.conf.get('spark.sql.shuffle.partitions')}; load (1/5/15 min) "
              f"{load[0]:.1f}/{load[1]:.1f}/{load[2]:.1f} before, {load_after[0]:.1f}/{load_after[1]:.1f}/"
              f"{load_after[2]:.1f} after")
        print(f"floor: median micro-batch {statistics.median(before):.2f} s before ours, "
              f"{statistics.median(after):.2f} s after (mean {floor:.2f} s)")
        print(f"ours: {args.files * args.per_file / ours_s:,.0f} events/s over the run ({ours_s:.1f} s)")
        for line in table(steps, floor):
            print(line)
        print("the steps' Spark jobs, each from its submission to its completion (medians of steps 1 on):")
        for line in timed:
            print(line)
        print(f"the last step's sink write taken apart (step {args.files - 1} again from step {args.files - 2}'s "
              "committed files):")
        for line in apart:
            print(line)
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)
        spark.stop()


if __name__ == "__main__":
    raise SystemExit(main())
