"""Delta Lake (docs/kafka-and-delta.md): a Delta table as a batch and as a streaming input,
``Binder.write(..., format="delta")``, and a running query's Delta sink holding every released
event exactly once across a stop and restart and a kill -9 between the sink's commit and
streamql's state commit, one Delta commit per micro-batch that released. The delta group: its own
pytest process with Delta's jars (``tests/delta_lake/run.sh``)."""
from __future__ import annotations

import importlib
import importlib.util
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import streamql as sq
from streamql.running import MICRO_BATCH, RunningQuery
from support.json_readings import EVERY_4, READINGS, averages, rows

pytestmark = pytest.mark.delta

#: readings per commit of the input table
PER_COMMIT = 12


def append_readings(spark: SparkSession, table: Path, commits: range) -> None:
    """Input commits ``commits``: each ``PER_COMMIT`` readings in one file, with ``seq``, their
    arrival order (a Delta table read as a batch lists its files in no particular order)."""
    for n in commits:
        batch = [{**r, "seq": n * PER_COMMIT + i} for i, r in enumerate(rows(n * PER_COMMIT, PER_COMMIT))]
        spark.createDataFrame(batch, "ts timestamp, meter string, consumption double, seq long") \
            .coalesce(1).write.format("delta").mode("append").save(str(table))


def expected(spark: SparkSession, table: Path) -> list[tuple[Any, ...]]:
    """What the sliding average releases over the whole input table read as a batch."""
    source = spark.read.format("delta").load(str(table))
    events = sq.Binder(spark).bind(READINGS, source, start="ts", arrival="seq", advance_time=EVERY_4) \
        .collect(averages(READINGS))
    return sorted((e.start.replace(tzinfo=None), e.end.replace(tzinfo=None), e.payload.meter, e.payload.average)
                  for e in events)


def table_rows(spark: SparkSession, table: Path) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in spark.read.format("delta").load(str(table)).drop(MICRO_BATCH).collect())


def history(spark: SparkSession, table: Path) -> DataFrame:
    """The table's history as any Delta reader sees it (delta-spark's ``DeltaTable``)."""
    tables = importlib.import_module("delta.tables")
    frame: DataFrame = tables.DeltaTable.forPath(spark, str(table)).history()
    return frame


def start(spark: SparkSession, source: str, sink: str, checkpoint: str) -> RunningQuery[Any]:
    """The sliding average from the input table read as a stream, one input commit per
    micro-batch, into a Delta sink."""
    stream = spark.readStream.format("delta").option("maxFilesPerTrigger", 1).load(source)
    binder = sq.Binder(spark).bind(READINGS, stream, start="ts", arrival="seq", advance_time=EVERY_4)
    return binder.start(averages(READINGS), sink=sink, checkpoint=checkpoint, format="delta", name="delta_averages")


def check_commits(spark: SparkSession, sink: Path) -> None:
    """One commit per micro-batch that released, each holding that micro-batch's rows only."""
    writes = history(spark, sink).filter(F.col("operation") == "WRITE").select("version").collect()
    batches = spark.read.format("delta").load(str(sink)).select(MICRO_BATCH).distinct().count()
    assert len(writes) == batches > 1
    for (version,) in writes:
        at = spark.read.format("delta").option("versionAsOf", version).load(str(sink))
        before = spark.read.format("delta").option("versionAsOf", version - 1).load(str(sink)) if version else None
        added = at if before is None else at.exceptAll(before)
        assert added.select(MICRO_BATCH).distinct().count() == 1


def test_a_delta_table_as_a_batch_input_and_write_to_delta(spark: SparkSession, tmp_path: Path) -> None:
    source, out = tmp_path / "in", tmp_path / "out"
    append_readings(spark, source, range(3))
    plain = spark.createDataFrame(
        [{**r, "seq": i} for i, r in enumerate(rows(0, 3 * PER_COMMIT))],
        "ts timestamp, meter string, consumption double, seq long")
    want = sq.Binder(spark).bind(READINGS, plain, start="ts", arrival="seq", advance_time=EVERY_4) \
        .collect(averages(READINGS))
    assert len(want) > 10
    binder = sq.Binder(spark).bind(READINGS, spark.read.format("delta").load(str(source)), start="ts",
                                   arrival="seq", advance_time=EVERY_4)
    assert binder.collect(averages(READINGS)) == want
    result = binder.write(averages(READINGS), str(out), format="delta")
    assert result.final_cti is not None
    assert table_rows(spark, out) == sorted((e.start.replace(tzinfo=None), e.end.replace(tzinfo=None),
                                             e.payload.meter, e.payload.average) for e in want)
    assert [r.operation for r in history(spark, out).collect()] == ["WRITE"]


def test_a_delta_stream_into_a_delta_sink_stopped_and_started_again(spark: SparkSession, tmp_path: Path) -> None:
    source, sink, checkpoint = tmp_path / "in", tmp_path / "out", tmp_path / "ck"
    append_readings(spark, source, range(3))
    running = start(spark, str(source), str(sink), str(checkpoint))
    running.process_all_available()
    running.stop(flush=False)
    first = running.progress
    assert len(first) >= 3 and all(p.input_rows["readings"] == PER_COMMIT for p in first)
    append_readings(spark, source, range(3, 5))
    again = start(spark, str(source), str(sink), str(checkpoint))
    again.process_all_available()
    again.stop()  # flush: the final micro-batch releases the rest
    assert again.progress[0].batch == first[-1].batch + 1
    # what the live query released is what a batch run over the whole table releases, once each
    assert table_rows(spark, sink) == expected(spark, source)
    released = [p.batch for p in first + again.progress if p.released > 0]
    assert sorted(r[0] for r in spark.read.format("delta").load(str(sink)).select(MICRO_BATCH).distinct()
                  .collect()) == released
    check_commits(spark, sink)


def test_killed_between_the_delta_commit_and_the_state_commit_holds_each_event_once(
        spark: SparkSession, tmp_path: Path) -> None:
    source, sink, checkpoint = tmp_path / "in", tmp_path / "out", tmp_path / "ck"
    append_readings(spark, source, range(5))
    kill_at = 2
    job = Path(__file__).with_name("delta_job.py")
    tests = Path(__file__).parent.parent
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tests), os.environ.get("PYTHONPATH", "")])}
    child = subprocess.Popen([sys.executable, str(job), str(source), str(sink), str(checkpoint), str(kill_at)],
                             env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        assert child.wait(timeout=600) == -signal.SIGKILL, "the job was to kill itself"
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()
    # the crash came after micro-batch 2's Delta commit and before its state
    committed = {int(p.name[len("state-"):]) for p in (checkpoint / "streamql").glob("state-*")}
    assert max(committed) == kill_at - 1
    killed = spark.read.format("delta").load(str(sink))
    assert killed.filter(F.col(MICRO_BATCH) == kill_at).count() > 0
    commits_before = history(spark, sink).count()
    # started again: Spark runs micro-batch 2 again, whose Delta append is skipped (txnVersion)
    running = start(spark, str(source), str(sink), str(checkpoint))
    running.process_all_available()
    running.stop()
    assert running.progress[0].batch == kill_at
    assert running.progress[0].released > 0
    assert history(spark, sink).count() == commits_before + sum(p.released > 0 for p in running.progress[1:])
    assert table_rows(spark, sink) == expected(spark, source)
    check_commits(spark, sink)


def test_the_delta_example_runs_as_documented(spark: SparkSession, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    spec = importlib.util.spec_from_file_location(
        "delta_sink_example", Path(__file__).parents[2] / "examples" / "delta_sink.py")
    assert spec is not None and spec.loader is not None
    example = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = example  # its dataclasses look their module up
    spec.loader.exec_module(example)
    example.main(spark, str(tmp_path))
    printed = capsys.readouterr().out
    assert "live == batch: the same averages, none twice" in printed
    assert "sink version 0: WRITE Append" in printed
