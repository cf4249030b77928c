"""A streaming query killed with SIGKILL while it runs and started again with the same checkpoint
releases what an uninterrupted run releases; the state a sliding-window query carries stays
bounded over many micro-batches."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

import streamql as sq
from streamql.running import MICRO_BATCH
from support import streaming_job as job

FILES = 8


def write_files(directory: Path, numbers: range) -> None:
    """One JSON file per number, their modification times a second apart in that order (the file
    source takes files in modification-time order: that is the arrival order)."""
    directory.mkdir(parents=True, exist_ok=True)
    now = time.time()
    for n in numbers:
        hidden, visible = directory / f".part-{n:04d}.json", directory / f"part-{n:04d}.json"
        hidden.write_text("".join(job.file_rows(n)))
        os.utime(hidden, (now - 100 + n, now - 100 + n))
        os.rename(hidden, visible)


def released(spark: SparkSession, sink: Path) -> list[tuple[object, ...]]:
    return sorted(tuple(r) for r in spark.read.parquet(str(sink)).drop(MICRO_BATCH).collect())


@pytest.mark.slow
def test_a_query_killed_mid_run_and_started_again_loses_and_repeats_nothing(spark: SparkSession,
                                                                              tmp_path: Path) -> None:
    source, sink, checkpoint = tmp_path / "in", tmp_path / "out", tmp_path / "ck"
    write_files(source, range(FILES))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(job.__file__).parent.parent),
                                                        os.environ.get("PYTHONPATH", "")])}
    child = subprocess.Popen([sys.executable, job.__file__, str(source), str(sink), str(checkpoint)], env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        # wait until two micro-batches are committed and Spark has planned one more (its offsets are
        # written) that streamql has not committed, then kill the child (and its JVM) at once: that
        # micro-batch's step is then under way. (Killed while Spark plans a micro-batch — after its
        # file source logged the next file, before the micro-batch's offsets — Spark's file source
        # skips that file when the query starts again: a window of Spark's own, docs/streaming.md.)
        states = checkpoint / "streamql"

        def in_a_step() -> bool:
            done = {int(p.name[len("state-"):]) for p in states.glob("state-*")}
            planned = [int(p.name) for p in (checkpoint / "spark" / "offsets").glob("[0-9]*")]
            return len(done) >= 2 and max(planned, default=-1) >= 2 and max(planned) not in done

        deadline = time.time() + 240
        while time.time() < deadline and not in_a_step() and child.poll() is None:
            time.sleep(0.05)
        assert child.poll() is None, "the streaming job ended by itself"
        assert len(list(states.glob("state-*"))) >= 2, "the streaming job made no progress"
    finally:
        os.killpg(child.pid, signal.SIGKILL)
        child.wait()
    running = job.bind(spark, str(source)).start(job.QUERY, sink=str(sink), checkpoint=str(checkpoint))
    running.process_all_available()
    running.stop()
    lines = [line for n in range(FILES) for line in job.file_rows(n)]
    data = spark.read.schema(job.SCHEMA).json(spark.sparkContext.parallelize(lines, 1))
    expected = sq.Binder(spark).bind(job.READINGS, data, start="ts", advance_time=job.SETTINGS).collect(job.QUERY)
    assert released(spark, sink) == sorted((e.start.replace(tzinfo=None), e.end.replace(tzinfo=None),
                                            e.payload.meter, e.payload.average) for e in expected)
    # the restarted run went on from the killed one's micro-batches
    assert running.progress[0].batch >= 2


BATCHES = int(os.environ.get("STREAMQL_BATCHES", "12"))


@pytest.mark.slow
def test_the_state_of_a_sliding_window_query_stays_bounded(spark: SparkSession, tmp_path: Path) -> None:
    """Micro-batches of 20 readings (a CTI every 5) through the runner that foreachBatch calls: the
    carried state (kept readings, released snapshot intervals that a later step could compute
    again) stays under a bound set by the window and the CTI spacing, not by the stream's length."""
    source = tmp_path / "in"
    write_files(source, range(1))
    running = job.bind(spark, str(source)).start(job.QUERY, sink=str(tmp_path / "out"),
                                                 checkpoint=str(tmp_path / "ck"))
    running.process_all_available()
    running.stop(flush=False)
    runner = running._runner
    for n in range(1, BATCHES):
        batch = spark.read.schema(job.SCHEMA).json(spark.sparkContext.parallelize(job.file_rows(n), 1))
        runner.run_batch(batch, n)
    sizes = [p.state_rows for p in running.progress]
    assert len(sizes) == BATCHES
    # four meters, a 35 us window over readings 10 us apart, CTIs every 5 readings: under a hundred
    # rows, and no growth from the first half of the run to the second
    assert max(sizes) <= 100, sizes
    assert max(sizes[BATCHES // 2:]) <= max(sizes[:BATCHES // 2]), sizes
    # and what it released is what a batch run over the same readings releases (no flush: the run
    # was not stopped)
    lines = [line for n in range(BATCHES) for line in job.file_rows(n)]
    data = spark.read.schema(job.SCHEMA).json(spark.sparkContext.parallelize(lines, 1))
    unflushed = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=5))
    expected = sq.Binder(spark).bind(job.READINGS, data, start="ts", advance_time=unflushed).collect(job.QUERY)
    assert released(spark, tmp_path / "out") == sorted(
        (e.start.replace(tzinfo=None), e.end.replace(tzinfo=None), e.payload.meter, e.payload.average)
        for e in expected)
    assert sum(p.released for p in running.progress) == len(expected)
