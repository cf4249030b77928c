"""The live hopping counts most streaming tests run: JSON files of readings, one a micro-batch,
the query started over them, and its sink against a batch run of the same rows."""
from __future__ import annotations

import os
import time
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

import streamql as sq
from support.json_readings import EVERY_4, READINGS, SCHEMA, put


@dataclass(frozen=True)
class MeterCount:
    meter: str
    n: int


def counts(readings: sq.Stream[Any]) -> sq.Stream[MeterCount]:
    return readings.group_by(lambda e: e.meter).hopping_window(timedelta(seconds=40), timedelta(seconds=10)).select(
        lambda w: MeterCount(w.key, w.count()))


def files(source: Path, parts: list[list[dict[str, Any]]], first: int = 0) -> None:
    """One JSON file per micro-batch, in modification-time order (the file source's order)."""
    for number, part in enumerate(parts, start=first):
        put(source, number, part)
        stamp = time.time() - 100 + number
        os.utime(source / f"part-{number:04d}.json", (stamp, stamp))


def start(spark: SparkSession, tmp_path: Path) -> sq.RunningQuery[Any]:
    stream = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).json(str(tmp_path / "in"))
    return sq.Binder(spark).bind(READINGS, stream, start="ts", advance_time=EVERY_4).start(
        counts(READINGS), sink=str(tmp_path / "out"), checkpoint=str(tmp_path / "ck"), feed=False)


def sink_matches_batch(spark: SparkSession, tmp_path: Path, everything: list[dict[str, Any]],
                       advance: sq.AdvanceTimeSettings) -> int:
    """The sink holds what a batch run over ``everything`` releases; how many events."""
    data = spark.createDataFrame(everything, SCHEMA)
    expected = sq.Binder(spark).bind(READINGS, data, start="ts", advance_time=advance).collect(counts(READINGS))
    got = spark.read.parquet(str(tmp_path / "out")).select("start", "end", "meter", "n").collect()
    assert sorted(tuple(r) for r in got) == sorted(
        (e.start.replace(tzinfo=None), e.end.replace(tzinfo=None), e.payload.meter, e.payload.n) for e in expected)
    return len(expected)
