"""``Binder.start(..., late_sink=...)``: each micro-batch's late records go to
``<late_sink>/micro_batch=<id>`` exactly once — across a stop and a restart with the same
checkpoint, and when Spark runs a micro-batch again after a crash — and together they are the
records of the batch run over the whole input (``Binder.late``)."""
from __future__ import annotations

import json
import shutil
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession

import streamql as sq
from streamql.errors import BindingError
from streamql.running import MICRO_BATCH
from support.json_readings import READINGS, SCHEMA, averages, put, rows

#: a CTI every 4 events; DROP removes the readings that come 2 minutes late
SETTINGS = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=4, flush=True))


def static(spark: SparkSession, batch: list[dict[str, Any]]) -> DataFrame:
    return spark.createDataFrame([(r["ts"], r["meter"], r["consumption"]) for r in batch], SCHEMA).coalesce(1)


def with_late(first: int, count: int) -> list[dict[str, Any]]:
    """Readings every 10 s, every fifth of them 2 minutes late (behind the CTI)."""
    data = rows(first, count)
    for i, r in enumerate(data):
        if (first + i) % 5 == 4:
            r["ts"] -= timedelta(minutes=2)
    return data


def late_rows(spark: SparkSession, path: Path) -> list[tuple[Any, ...]]:
    df = spark.read.parquet(str(path))
    return sorted((r["action"], r["kind"], r["start"], r["cti"], r["payload"]["meter"])
                  for r in df.drop(MICRO_BATCH).collect())


@pytest.mark.slow
def test_late_records_are_written_once_per_micro_batch_across_a_restart(spark: SparkSession, tmp_path: Path) -> None:
    data = with_late(0, 40)
    source, sink, late, checkpoint = tmp_path / "in", tmp_path / "out", tmp_path / "late", tmp_path / "ck"
    put(source, 0, data[:13])
    binder = sq.Binder(spark).bind(READINGS, spark.readStream.schema(SCHEMA).json(str(source)), start="ts",
                                   advance_time=SETTINGS)
    q = averages(READINGS)
    first = binder.start(q, sink=str(sink), checkpoint=str(checkpoint), late_sink=str(late))
    first.process_all_available()
    first.stop(flush=False)
    written = late_rows(spark, late)
    assert written
    # Spark runs micro-batch 0 again after a crash that lost its state: the records stay as they were
    state = checkpoint / "streamql" / "state-000000000000"
    kept = json.loads((state / "meta.json").read_text())["state"]
    shutil.rmtree(state)
    first._runner.run_batch(static(spark, data[:13]), 0)
    assert json.loads((state / "meta.json").read_text())["state"] == kept
    assert late_rows(spark, late) == written
    put(source, 1, data[13:27])
    second = binder.start(q, sink=str(sink), checkpoint=str(checkpoint), late_sink=str(late))
    second.process_all_available()
    put(source, 2, data[27:])
    second.process_all_available()
    second.stop()
    batch = sq.Binder(spark).bind(READINGS, static(spark, data), start="ts", advance_time=SETTINGS)
    expected = sorted((r["action"], r["kind"], r["start"], r["cti"], r["payload"]["meter"])
                      for r in batch.late(q).collect())
    assert len(expected) == 8  # readings 4, 9, ..., 39: each two minutes behind the CTI
    assert late_rows(spark, late) == expected
    progress = first.progress + second.progress
    assert progress[-1].dropped == len(expected)
    # a partition per micro-batch that had late events
    partitions = {p.name for p in late.iterdir() if p.name.startswith(MICRO_BATCH)}
    assert partitions and partitions <= {f"{MICRO_BATCH}={p.batch}" for p in progress}


def test_late_sink_must_differ_from_the_sink(spark: SparkSession, tmp_path: Path) -> None:
    binder = sq.Binder(spark).bind(READINGS, spark.readStream.schema(SCHEMA).json(str(tmp_path)), start="ts",
                                   advance_time=SETTINGS)
    with pytest.raises(BindingError, match="late_sink must be a path other than the sink's"):
        binder.start(averages(READINGS), sink=str(tmp_path / "out"), checkpoint=str(tmp_path / "ck"),
                     late_sink=str(tmp_path / "out"))
